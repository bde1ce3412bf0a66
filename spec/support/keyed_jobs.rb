# frozen_string_literal: true

require "sidekiq"
require_relative "tracked_job"

module LimitFetchSpec
  # Job classes with job limits. Each records, from inside, how many of its
  # class and of each key run at once (Recorder, under the labels below), so
  # that the specs can hold the limits to what really ran.
  module KeyedJobs
    QUEUE = "keyed"

    def self.class_label(job_class) = "class:#{job_class.name}"

    def self.key_label(key) = "key:#{key}"
  end

  # At most 2 at once, all processes: perform(seconds).
  class ExportJob
    include Sidekiq::Job

    sidekiq_options retry: false, queue: KeyedJobs::QUEUE, limit_fetch: {concurrency: 2}

    def perform(seconds)
      Recorder.track(KeyedJobs.class_label(self.class), jid) { sleep seconds }
    end
  end

  # One per tenant at a time: perform(tenant, seconds).
  class SyncJob
    include Sidekiq::Job

    sidekiq_options retry: false, queue: KeyedJobs::QUEUE,
      limit_fetch: {key: ->(tenant, *) { tenant }, concurrency: 1}

    def perform(tenant, seconds)
      Recorder.track(KeyedJobs.key_label(tenant), jid) { sleep seconds }
    end
  end

  # One per user; a duplicate while one runs is discarded (lock_around_an_id):
  # perform(user_id, gate), waiting until the gate opens (at most 10 s).
  class WebhookJob
    include Sidekiq::Job

    sidekiq_options retry: false, queue: KeyedJobs::QUEUE,
      limit_fetch: {key: ->(user_id, *) { user_id }, concurrency: 1, on_limit: :discard}

    def perform(user_id, gate)
      Recorder.track(KeyedJobs.key_label("webhook-#{user_id}"), jid) { Recorder.wait_for_gate(gate, 10) }
    end
  end

  # Records, from inside, when it started and how many ran at once, under
  # +label+.
  module StampedRun
    def run(label, seconds)
      Recorder.stamp(label)
      Recorder.track(label, jid) { sleep seconds }
    end
  end

  # At most 3 starts a second, all processes: perform(seconds).
  class RatedJob
    include Sidekiq::Job
    include StampedRun

    sidekiq_options retry: false, queue: KeyedJobs::QUEUE, limit_fetch: {rate: {limit: 3, period: 1}}

    def perform(seconds) = run(KeyedJobs.class_label(self.class), seconds)
  end

  # At most 5 starts a second per tenant: perform(tenant, seconds).
  class TenantRatedJob
    include Sidekiq::Job
    include StampedRun

    sidekiq_options retry: false, queue: KeyedJobs::QUEUE,
      limit_fetch: {key: ->(tenant, *) { tenant }, rate: {limit: 5, period: 1}}

    def perform(tenant, seconds) = run(KeyedJobs.key_label("rated-#{tenant}"), seconds)
  end

  # Per tenant, at most 2 at once and 4 starts in any 0.5 s:
  # perform(tenant, seconds).
  class TenantBoundJob
    include Sidekiq::Job
    include StampedRun

    sidekiq_options retry: false, queue: KeyedJobs::QUEUE,
      limit_fetch: {key: ->(tenant, *) { tenant }, concurrency: 2, rate: {limit: 4, period: 0.5}}

    def perform(tenant, seconds) = run(KeyedJobs.key_label("bound-#{tenant}"), seconds)
  end
end
