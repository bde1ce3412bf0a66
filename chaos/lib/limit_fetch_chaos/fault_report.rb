# frozen_string_literal: true

module LimitFetchChaos
  # bin/chaos --fault's outcome (FaultChecks), as bin/chaos prints it (#to_h).
  class FaultReport < Report
    include FaultChecks

    def to_h
      {passed: passed?, failures: failures, environment: @outcome.fetch(:environment), fault: fault_h,
       jobs: jobs_h, limits: limits_h,
       stalls: @outcome.fetch(:stalls).found(runs), **@outcome.slice(:booked, :leftovers).transform_values(&:to_h),
       seconds: @outcome.fetch(:seconds).round(1)}
    end

    private

    def limits_h = limits.to_h { [_1.is_a?(Concurrency) ? "queue #{_1.queue}" : _1.id, _1.to_h] }

    def jobs_h
      {pushed: jids.size, completed: completed.size, lost: lost.size, runs: runs.size, repeats: duplicates.counts,
       repeated_jobs: duplicates.jobs}
    end

    def fault_h
      {spec: @plan.fault.to_s, redis: @restart&.then { {at_s: _1.at.round(2), down_s: _1.seconds.round(3)} },
       freeze: frozen_h, reaped: @outcome.fetch(:reaped)}
    end
  end
end
