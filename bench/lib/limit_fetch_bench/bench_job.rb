# frozen_string_literal: true

module LimitFetchBench
  # The job every run executes: args are [seconds to sleep, push time]; a
  # no-op job sleeps 0. The push time (CLOCK_REALTIME, a Float) is set where
  # Sidekiq sets enqueued_at, which only has millisecond resolution.
  class BenchJob
    include Sidekiq::Job

    def perform(seconds = 0, _pushed_at = nil)
      sleep(seconds) if seconds.positive?
    end
  end
end
