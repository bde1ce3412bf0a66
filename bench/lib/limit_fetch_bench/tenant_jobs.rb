# frozen_string_literal: true

module LimitFetchBench
  # The keyed section's no-op jobs, perform(tenant): the same job with a key
  # limit of 1 (DistinctKeyJob: one key per job, never contended), of 2 per
  # tenant (TenantJob) or with none (UnkeyedTenantJob). Their payloads differ
  # only by the class name and the limits they carry.
  module TenantJobs
    def perform(_tenant) = nil
  end

  class DistinctKeyJob
    include Sidekiq::Job
    include TenantJobs

    sidekiq_options limit_fetch: {key: ->(tenant) { tenant }, concurrency: 1}
  end

  class TenantJob
    include Sidekiq::Job
    include TenantJobs

    LIMIT = 2

    sidekiq_options limit_fetch: {key: ->(tenant) { tenant }, concurrency: LIMIT}
  end

  class UnkeyedTenantJob
    include Sidekiq::Job
    include TenantJobs
  end
end
