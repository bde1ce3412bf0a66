# frozen_string_literal: true

module LimitFetchBench
  # The rate section's no-op jobs: the same job with no limit (UnratedJob),
  # under a class rate that never binds (ClassRatedJob), under a rate per
  # tenant (TenantRatedJob, perform(tenant); UnkeyedTenantJob is the same
  # with no limit, for the reschedule-based limiter), and the idle run's
  # PacedJob, one start per window of a fifth of a second, which notes when
  # it started (PaceLog). Their payloads differ only by the class name and
  # the limits they carry.
  module RateJobs
    def perform(*) = nil

    module_function

    def rate(pair) = {limit: pair[0], period: pair[1]}

    # The id of a class's own job limit.
    def class_id(job_class) = Sidekiq::LimitFetch::JobLimitId.of_class(job_class.name)
  end

  class UnratedJob
    include Sidekiq::Job
    include RateJobs
  end

  class ClassRatedJob
    include Sidekiq::Job
    include RateJobs

    sidekiq_options limit_fetch: {rate: RateJobs.rate(RateVariants::CLASS_RATE)}
  end

  class TenantRatedJob
    include Sidekiq::Job
    include RateJobs

    sidekiq_options limit_fetch: {key: ->(tenant, *) { tenant }, rate: RateJobs.rate(RateVariants::HOT_RATE)}
  end

  class PacedJob
    include Sidekiq::Job

    sidekiq_options limit_fetch: {rate: RateJobs.rate(RateVariants::PACED_RATE)}

    class << self
      # The run's PaceLog.
      attr_accessor :log
    end

    def perform = PacedJob.log&.started
  end
end
