# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # How a capsule's core runs, besides where Redis is: the checked
    # :heartbeat_period, :max_recoveries and :lookahead of
    # LimitFetch.configuration. Native.new reads it by name.
    CapsuleOptions = Data.define(:heartbeat_period, :max_recoveries, :lookahead)

    class CapsuleOptions
      def initialize(heartbeat_period:, max_recoveries:, lookahead:)
        super(
          heartbeat_period: Check.seconds(:heartbeat_period, heartbeat_period),
          max_recoveries: Check.non_negative_integer(:max_recoveries, max_recoveries),
          lookahead: Check.positive_integer(:lookahead, lookahead)
        )
      end
    end
  end
end
