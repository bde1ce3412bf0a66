# frozen_string_literal: true

module LimitFetchBench
  # Pushes the rate section's workloads as an application does, through the
  # gem's client middleware, which puts the rates each job carries in its
  # payload (KeyedPusher). Returns the number of jobs pushed.
  class RatePusher < KeyedPusher
    # `count` no-op jobs of `job_class`, no arguments.
    def same(job_class, count) = bulk_of(job_class, Array.new(count) { [] })

    # `hot` jobs of the hot tenant first in line, then 10 jobs of each of 100
    # other tenants, interleaved: rated per tenant, or with no limit.
    def rated_hot_key(hot, keyed)
      cold = Array.new(COLD_JOBS) { ["cold-#{_1 % COLD_TENANTS}"] }
      bulk_of(keyed ? TenantRatedJob : UnkeyedTenantJob, Array.new(hot) { [HOT_TENANT] } + cold)
    end
  end
end
