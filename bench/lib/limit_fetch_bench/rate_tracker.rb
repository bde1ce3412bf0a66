# frozen_string_literal: true

module LimitFetchBench
  # A TenantTracker that also notes when each of one tenant's jobs started
  # (seconds since `origin`), from inside the jobs: the hot tenant's pace
  # under its rate.
  class RateTracker < TenantTracker
    def initialize(origin, tenant)
      super(origin)
      @tenant = tenant
      @starts = []
    end

    def started(tenant)
      super
      return unless tenant == @tenant

      now = LimitFetchBench.monotonic
      @lock.synchronize { @starts << (now - @origin) }
    end

    # The tenant's starts, in seconds since the origin, in order.
    def starts = @lock.synchronize { @starts.sort }
  end
end
