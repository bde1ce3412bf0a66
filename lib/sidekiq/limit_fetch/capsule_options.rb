# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # How a capsule's core runs, besides where Redis is: the checked
    # :heartbeat_period, :max_recoveries, :lookahead and
    # :at_limit_warning_after of LimitFetch.configuration. Native.new reads
    # it by name; the heartbeat reads :at_limit_warning_after. Its members
    # are listed in shapes.rb, which requires this file.
    class CapsuleOptions
      def initialize(heartbeat_period:, max_recoveries:, lookahead:, at_limit_warning_after:)
        super(
          heartbeat_period: Check.seconds(:heartbeat_period, heartbeat_period),
          max_recoveries: Check.non_negative_integer(:max_recoveries, max_recoveries),
          lookahead: Check.positive_integer(:lookahead, lookahead),
          at_limit_warning_after: Check.seconds(:at_limit_warning_after, at_limit_warning_after)
        )
      end
    end
  end
end
