# frozen_string_literal: true

module LimitFetchChaos
  # A run's Checks as they go to results/latest.json (#to_h): the verdict,
  # what the chaos did and what the ledger and Redis showed.
  class Report < Checks
    def to_h
      {passed: passed?, failures: failures, environment: @outcome.fetch(:environment), plan: @plan.to_h,
       jobs: jobs_h.merge(duplicates_h), limited: limited.to_h, tuner: @tuner.to_h, **limits_h,
       chaos: chaos_h, booked_after_jobs: @outcome.fetch(:booked).to_h, redis_after_stop: leftovers_h,
       timing: timing_h}
    end

    private

    def limits_h
      queues, job_limits = limits.partition { _1.is_a?(Concurrency) }
      {concurrency: queues.to_h { [_1.queue, _1.to_h.except(:queue)] },
       job_limits: job_limits.to_h { [_1.id, _1.to_h.except(:id)] }, rates: rates.to_h}
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
