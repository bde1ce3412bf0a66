# frozen_string_literal: true

module LimitFetchBench
  # Seed 004's approach (tenant_level_job_limits), for comparison: a server
  # middleware that takes a slot of the job's tenant in a counter per tenant
  # and queue before the job runs (the seed's atomic "increment if below
  # max", here INCR, and DECR if that went over), gives it back when the job
  # ends, and reschedules a job whose tenant is at its limit instead of
  # running it. The seed reschedules a minute later; the bench 1 s later,
  # with Sidekiq's scheduled poller looking every 0.5-1.5 s from the start
  # (`configure`), or waiting for the poller would be all the bench measured.
  class SeedReschedule
    include Sidekiq::ServerMiddleware

    LIMIT = 2
    DELAY = 1.0

    # Sidekiq's default poller first waits 5-15 s, then looks every 2.5-7.5 s.
    module PromptPoller
      private

      def initial_wait = cleanup
    end

    def self.configure(config)
      config[:poll_interval_average] = 1
      Sidekiq::Scheduled::Poller.prepend(PromptPoller)
    end

    def call(_job, payload, queue)
      key = "bench:seed004:#{queue}:#{payload["args"].first}"
      return reschedule(payload, key) if redis { _1.call("INCR", key) } > LIMIT

      begin
        yield
      ensure
        redis { _1.call("DECR", key) }
      end
    end

    private

    def reschedule(payload, key)
      redis { _1.call("DECR", key) }
      Sidekiq::Client.new(config: config).push(payload.merge("at" => Time.now.to_f + DELAY))
      Recorder.current&.job_rescheduled
    end
  end
end
