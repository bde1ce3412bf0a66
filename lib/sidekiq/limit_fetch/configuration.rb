# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    DEFAULTS = {
      # Seconds a fetcher sleeps when no queue has an eligible job.
      poll_range: 0.4..0.5,
      # Seconds between heartbeats; a capsule silent for 4 periods is reaped.
      heartbeat_period: 15
    }.freeze

    @configuration = DEFAULTS.dup

    class << self
      attr_reader :configuration
    end
  end
end
