# frozen_string_literal: true

module LimitFetchChaos
  # A run's Checks as they go to results/latest.json (#to_h): the verdict,
  # what the chaos did and what the ledger and Redis showed.
  class Report < Checks
    def to_h
      {passed: passed?, failures: failures, environment: @outcome.fetch(:environment), plan: @plan.to_h,
       jobs: jobs_h.merge(duplicates_h), limited: limited_h, tuner: @tuner.to_h, **limits_h,
       chaos: chaos_h, booked_after_jobs: @outcome.fetch(:booked).to_h, redis_after_stop: leftovers_h,
       timing: timing_h}
    end

    private

    def limits_h
      queues, job_limits = limits.partition { _1.is_a?(Concurrency) }
      {concurrency: queues.to_h { [_1.queue, _1.to_h.except(:queue)] },
       job_limits: job_limits.to_h { [_1.id, _1.to_h.except(:id)] }, rates: rates_h}
    end

    # Per rate (RatesChecks), its windows, its longest wait with jobs parked
    # and none of its runs begun within a period, in how many samples jobs
    # were parked, and its leases.
    def rates_h
      rates.windows.to_h { [_1.id, _1.to_h.merge(**wait_h(_1.id), leases: rates.leases.fetch(_1.id))] }
    end

    def wait_h(id)
      wait = rates.waits.fetch("rate #{id}")
      {longest_wait_s: wait[:seconds], parked_samples: wait[:waiting], samples: wait[:samples],
       stall_after_s: Stalls::RATE_STALL}
    end

    # What the LIMITED classes' jobs showed: per class, what was pushed,
    # completed, discarded and lost, and whether the pushes carried their
    # job limits; how many were parked; the signs of each kind of job limit
    # at work (LimitedChecks); per FAIR class, what its tenants got
    # (FairShares: of every run, the frozen process's woken originals too).
    def limited_h
      {classes: LIMITED.to_h { [_1.name, class_h(_1.name)] }, **feeder.limited_h.except(:classes),
       discards: @outcome.fetch(:discards).to_h, per_queue_most: limited.per_queue_most, tuned: tuned.phases,
       fair: fair_h}
    end

    def feeder = @outcome.fetch(:feeder)

    def class_h(name)
      jids = feeder.limited_jids.fetch(name)
      {enqueued: jids.size, **{completed:, discarded:, lost:}.transform_values { (jids & _1).size },
       **feeder.limited_h[:classes].fetch(name)}
    end

    def fair_h
      FAIR.to_h do |job_class|
        pushed = feeder.fair_pushes.fetch(job_class.name)
        [job_class.name, FairShares.new(job_class.name, job_class::TENANTS, runs, pushed).to_h]
      end
    end

    def jobs_h
      {enqueued: jids.size, completed: completed.size, discarded: discarded.size, lost: lost.size,
       lost_jids: lost.first(SHOWN), **runs_h}
    end

    def runs_h = {runs: runs.size, extra_runs: runs.size - runs.map(&:jid).uniq.size}

    def duplicates_h
      {run_more_than_once: duplicates.jobs.size, repeats: duplicates.counts, repeated_jobs: duplicates.jobs,
       repeated_unexplained: duplicates.unexplained.first(SHOWN)}
    end

    def leftovers_h = leftovers.to_h.merge(clean: leftovers.problems.empty?)

    def timing_h
      seconds = @outcome.fetch(:seconds)
      {seconds: seconds.round(2), jobs_per_second: (completed.size / seconds).round(1)}
    end

    def frozen_h = @frozen&.to_h&.merge(originals: runs.count { @frozen.original?(_1) })

    def chaos_h
      {kills: @fleet.killed.size, replacements: @fleet.replacements, reaped: @outcome.fetch(:reaped),
       redis_restart: @restart && {at_s: @restart.at.round(2), down_s: @restart.seconds.round(3),
                                   survived: outage.keys, raised: outage},
       freeze: frozen_h}
    end
  end
end
