# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    DEFAULTS = {
      # Seconds a fetcher sleeps when no queue has an eligible job.
      poll_range: 0.4..0.5,
      # Seconds between heartbeats; a capsule silent for 4 periods is reaped.
      heartbeat_period: 15,
      # Times a job may be recovered from dead processes; one more and it is
      # a poison pill that goes to the dead set.
      max_recoveries: 3
    }.freeze

    @configuration = DEFAULTS.dup

    class << self
      attr_reader :configuration
    end
  end
end
