# frozen_string_literal: true

require "sidekiq"
require_relative "../../../tools/lib/limit_fetch_tools/partner_api"

module LimitFetchBench
  # The back_off section's jobs, perform(tenant, millis): a call to the
  # simulated downstream through PartnerApi (DOWNSTREAM_URL), which holds it
  # `millis` ms, or refuses it at once with a 429. On a 429 the job raises
  # Sidekiq::LimitFetch::BackOff with the header's Retry-After where the gem
  # has it; else it re-raises the client's error, and Sidekiq retries the
  # job as it retries any failure. They differ by their limits only:
  # AdaptiveApiJob (per tenant, adaptive between 1 and 16; defined only
  # where the gem has BackOff), FixedApiJob (16 per tenant) and
  # UnlimitedApiJob (none). Loaded by the section's `sidekiq` processes
  # (CliApp) and by the measuring process, which pushes them (the gem's
  # client middleware works their limits out at push). Each job records in
  # Redis that it ran (RUNS) and, once its call succeeded, that it was done
  # (DONE), by jid; Ledger, a server middleware, the retry count of each
  # run of a retried job (RETRY_COUNTS).
  module BackOffJobs
    RUNS = "bench:back_off:runs"
    DONE = "bench:back_off:done"
    RETRY_COUNTS = "bench:back_off:retry_counts"
    QUEUE = "back_off"
    FIXED = 16
    ADAPTIVE = (1..16)

    def self.api = @api ||= PartnerApi.new(ENV.fetch("DOWNSTREAM_URL"))

    def self.back_off? = defined?(Sidekiq::LimitFetch::BackOff) ? true : false

    def perform(tenant, millis)
      Sidekiq.redis { _1.call("HINCRBY", RUNS, jid, 1) }
      BackOffJobs.api.call(tenant:, millis:)
      Sidekiq.redis { _1.call("HINCRBY", DONE, jid, 1) }
    rescue PartnerApi::TooManyRequests => e
      raise Sidekiq::LimitFetch::BackOff.new(retry_after: e.retry_after) if BackOffJobs.back_off?

      raise
    end

    # Records the retry count a retried job runs with (Sidekiq sets it on
    # its first failure).
    class Ledger
      include Sidekiq::ServerMiddleware

      def call(_job, msg, _queue)
        Sidekiq.redis { _1.call("HSET", RETRY_COUNTS, msg["jid"], msg["retry_count"]) } if msg.key?("retry_count")
        yield
      end
    end
  end

  class FixedApiJob
    include Sidekiq::Job
    include BackOffJobs

    sidekiq_options queue: BackOffJobs::QUEUE,
      limit_fetch: {key: ->(tenant, *) { tenant }, concurrency: BackOffJobs::FIXED}
  end

  class UnlimitedApiJob
    include Sidekiq::Job
    include BackOffJobs

    sidekiq_options queue: BackOffJobs::QUEUE
  end

  if BackOffJobs.back_off?
    class AdaptiveApiJob
      include Sidekiq::Job
      include BackOffJobs

      sidekiq_options queue: BackOffJobs::QUEUE,
        limit_fetch: {key: ->(tenant, *) { tenant }, concurrency: BackOffJobs::ADAPTIVE}
    end
  end
end
