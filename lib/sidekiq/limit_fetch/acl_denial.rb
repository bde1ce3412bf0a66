# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # A command Redis refused under its ACL after boot (the rules changed
    # under a running process: the boot check found them complete), logged
    # at error level once per denied command in a process, with the rule to
    # add (the core's message names it), rather than at every fetch.
    module AclDenial
      @seen = {}
      @lock = Mutex.new

      # What the core's message says is denied: "`ltrim`", or "a key".
      DENIED = /the Redis ACL denies (`[^`]+`|a key)/

      def self.report(error, logger)
        kind = error.message[DENIED, 1]
        return unless kind && @lock.synchronize { @seen[kind] ? false : (@seen[kind] = true) }

        logger.error("sidekiq-limit_fetch: Redis refused a command: #{error.message}")
      end
    end
  end
end
