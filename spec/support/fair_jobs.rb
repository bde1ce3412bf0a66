# frozen_string_literal: true

require "sidekiq"
require_relative "tracked_job"

module LimitFetchSpec
  # A class whose 4 slots its tenants share: perform(tenant, seconds)
  # records, from inside, how many of the class and of each tenant run at
  # once, and when each job started.
  class FairJob
    include Sidekiq::Job

    QUEUE = "fair"

    sidekiq_options retry: false, queue: QUEUE, limit_fetch: {concurrency: 4, fair: ->(tenant, *) { tenant }}

    def perform(tenant, seconds)
      Recorder.stamp("fair-#{tenant}")
      Recorder.track("class:fair", jid) { Recorder.track("fair:#{tenant}", jid) { sleep seconds } }
    end
  end

  # The same, gold tenants weighing 3.
  class WeightedFairJob
    include Sidekiq::Job

    sidekiq_options retry: false, queue: FairJob::QUEUE,
      limit_fetch: {concurrency: 5, fair: {by: ->(tenant, *) { tenant },
                                           weight: ->(tenant, *) { tenant.start_with?("gold") ? 3 : 1 }}}

    def perform(tenant, seconds)
      Recorder.track("class:weighted", jid) { Recorder.track("weighted:#{tenant}", jid) { sleep seconds } }
    end
  end

  # A job of the fair queue "imports" (`fair_limits:`, the spec sets its
  # limit): its tenant is its key (whose own limit, 100, never binds).
  class ImportJob
    include Sidekiq::Job

    QUEUE = "imports"

    sidekiq_options retry: false, queue: QUEUE, limit_fetch: {key: ->(tenant, *) { tenant }, concurrency: 100}

    def perform(_tenant, seconds) = sleep(seconds)
  end

  # A job of the same queue without a key: its class is its tenant.
  class PlainImportJob
    include Sidekiq::Job

    sidekiq_options retry: false, queue: ImportJob::QUEUE

    def perform(seconds) = sleep(seconds)
  end
end
