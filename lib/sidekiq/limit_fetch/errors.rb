# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # Base class of every error the gem raises (bad limits raise ArgumentError).
    class Error < StandardError; end

    # Redis could not be reached, or the connection broke or timed out.
    class ConnectionError < Error; end

    # Redis answered a command with an error (e.g. NOPERM under an ACL: the
    # message names the rule to add), or, at boot, the server or its user
    # cannot run the gem (a Redis before 7.0, a command the ACL denies).
    class CommandError < Error; end
  end
end
