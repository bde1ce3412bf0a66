# frozen_string_literal: true

module LimitFetchBench
  # A reschedule-based rate limiter, for comparison, the way seed 004
  # limits concurrency (SeedReschedule): a server middleware counts the
  # tenant's starts in a fixed window (a Redis counter per tenant and window
  # of PERIOD seconds, INCR, with EXPIRE set by the first) and, when the
  # count is over LIMIT, reschedules the job DELAY seconds later instead of
  # running it, with the prompt poller SeedReschedule.configure sets up.
  # Fixed windows let up to twice the limit start within one period across
  # a window's edge; that is the approach's, not a fault of the bench.
  class SeedRate
    include Sidekiq::ServerMiddleware

    LIMIT, PERIOD = RateVariants::HOT_RATE
    DELAY = 1.0

    def self.configure(config) = SeedReschedule.configure(config)

    def call(_job, payload, _queue)
      key = "bench:seedrate:#{payload["args"].first}:#{(Time.now.to_f / PERIOD).floor}"
      count = redis { _1.call("INCR", key) }
      redis { _1.call("EXPIRE", key, PERIOD * 2) } if count == 1
      return reschedule(payload) if count > LIMIT

      yield
    end

    private

    def reschedule(payload)
      Sidekiq::Client.new(config: config).push(payload.merge("at" => Time.now.to_f + DELAY))
      Recorder.current&.job_rescheduled
    end
  end
end
