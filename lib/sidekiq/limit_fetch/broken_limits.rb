# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # Warns about limits in Redis that are not valid (Limits.parse), such as
    # a value set by hand: the fetch reads them as 0, so their queue stops.
    # Warned about once per value, not on every heartbeat.
    class BrokenLimits
      include Sidekiq::Component

      # +admin+: the NativeAdmin of the capsule's Redis.
      def initialize(capsule, admin)
        @config = capsule
        @admin = admin
        @warned = {} # limit key => the broken value last warned about
      end

      def check
        @admin.stored_limits(config.queues.uniq).each { |limit| check_one(limit) }
      rescue LimitFetch::Error => e
        logger.warn("sidekiq-limit_fetch: could not read the limits of this capsule's queues: #{e.message}")
      end

      private

      def check_one(limit)
        key = limit.key
        raw = limit.raw
        if raw.nil? || Limits.parse(raw)
          @warned.delete(key)
        elsif @warned[key] != raw
          @warned[key] = raw
          logger.warn("sidekiq-limit_fetch: #{limit.kind} of queue #{limit.queue} (#{key}) is #{raw.inspect}, not " \
                      "a non-negative integer up to #{Limits::MAX}: it counts as 0, no job of the queue is " \
                      "fetched until it is fixed")
        end
      end
    end
  end
end
