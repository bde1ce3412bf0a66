# frozen_string_literal: true

# Job classes of spec/integration/rollback_spec.rb, loaded by the spec, by
# the gem's processes (through LF_TEST_REQUIRE) and by the plain Sidekiq
# processes that follow them (spec/support/plain_sidekiq.rb): apart from the
# other keyed jobs, whose list the boot line spec holds. Each records its
# start and its end (Recorder, under "rollback").
require "sidekiq"
require_relative "tracked_job"

module LimitFetchSpec
  module RollbackJobs
    QUEUE = "rollback"
    LABEL = "rollback"
  end

  # One per tenant at a time; waits until +gate+ opens (at most 20 s):
  # perform(tenant, gate).
  class TenantGatedJob
    include Sidekiq::Job

    sidekiq_options retry: false, queue: RollbackJobs::QUEUE,
      limit_fetch: {key: ->(tenant, *) { tenant }, concurrency: 1}

    def perform(_tenant, gate)
      Recorder.track(RollbackJobs::LABEL, jid) { Recorder.wait_for_gate(gate, 20) }
    end
  end

  # One start a minute: perform(number).
  class SlowRatedJob
    include Sidekiq::Job

    sidekiq_options retry: false, queue: RollbackJobs::QUEUE, limit_fetch: {rate: {limit: 1, period: 60}}

    def perform(_number)
      Recorder.track(RollbackJobs::LABEL, jid) { sleep 0.01 }
    end
  end
end
