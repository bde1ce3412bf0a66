# frozen_string_literal: true

module LimitFetchChaos
  # The outcome of a run: what the chaos did, what the ledger and Redis show,
  # and every failure found. #to_h is what goes to results/latest.json.
  class Report
    # Jids listed at most, of those lost or run more than once unexplained.
    SHOWN = 20

    attr_reader :failures

    # `outcome`: jids (pushed), completed (jids), runs, leftovers, feeder (the
    # Feeder: the LIMITED classes' jids and tenants, what their pushes
    # carried, the parked jobs it saw), discards (Discards), reaped (as
    # Fleet#reaped), rate_stalls (Stalls of the rates' parked jobs), recorded
    # (RecordedStarts: the starts the gem counted for each rate), unclean
    # (processes TERM did not stop), unsettled (nil, or the capsules still
    # registered when dead ones should have been reaped), booked (Booked,
    # once the jobs had ended), seconds (until every job had completed or
    # was discarded), environment.
    def initialize(plan, fleet, mayhem, tuner, **outcome)
      @plan = plan
      @fleet = fleet
      @restart = mayhem.restart
      @frozen = mayhem.frozen
      @tuner = tuner
      @outcome = outcome
      @failures = find_failures
    end

    def passed? = failures.empty?

    def to_h
      {passed: passed?, failures: failures, environment: @outcome.fetch(:environment), plan: plan_h,
       jobs: jobs_h.merge(duplicates_h), limited: limited.to_h, tuner: @tuner.to_h, **limits_h,
       chaos: chaos_h, booked_after_jobs: @outcome.fetch(:booked).to_h, redis_after_stop: leftovers_h,
       timing: timing_h}
    end

    private

    def find_failures
      [*job_failures, *limited.problems, *(concurrency + job_limits).flat_map(&:violations), *rates.problems,
       *@tuner.problems, *chaos_failures, *freeze_failures, *@outcome.fetch(:booked).problems, *leftovers.problems]
    end

    def jids = @outcome.fetch(:jids)

    def completed = @outcome.fetch(:completed)

    def runs = @outcome.fetch(:runs)

    # The runs the limits are held to: all but the frozen process's woken
    # originals (Frozen#original?), which a process frozen longer than its
    # heartbeat's expiry runs on beside their second runs.
    def counted = @counted ||= runs.reject { @frozen&.original?(_1) }

    def leftovers = @outcome.fetch(:leftovers)

    def seconds = @outcome.fetch(:seconds)

    # Jids neither completed nor discarded.
    def lost = @lost ||= jids - completed - discarded

    def discarded = @outcome.fetch(:discards).jids

    def concurrency
      @concurrency ||= @plan.queues.map { |queue| Concurrency.of(queue, counted.select { _1.queue == queue }, @plan) }
    end

    # Each WatchedLimit's, the tuned one against the Tuner's schedule.
    def job_limits
      @job_limits ||= WatchedLimit.all.map do |watched|
        schedule = watched.id == Tuner::ID ? @tuner.schedule : LimitSchedule.constant(watched.limit)
        JobLimitConcurrency.of(watched.id, watched.runs_of(counted), schedule)
      end
    end

    def rates
      @rates ||= RatesReport.new(counted, runs, @outcome.fetch(:rate_stalls), @outcome.fetch(:recorded), @restart)
    end

    def limited
      @limited ||= LimitedReport.new(@outcome.merge(runs: counted), lost, job_limits.find { _1.id == Tuner::ID })
    end

    def limits_h
      {concurrency: concurrency.to_h { [_1.queue, _1.to_h.except(:queue)] },
       job_limits: job_limits.to_h { [_1.id, _1.to_h.except(:id)] }, rates: rates.to_h}
    end

    def duplicates
      @duplicates ||= Duplicates.new(runs, @fleet.killed.to_h { [_1, @fleet.ended.fetch(_1)] }, @fleet.held_at_kill,
        @restart, frozen: @frozen)
    end

    # Jids with a run in the ledger.
    def ran = @ran ||= runs.map(&:jid).uniq

    # Jids that ran but were never pushed.
    def unexpected = ran - jids

    def job_failures
      [("#{lost.size} jobs never completed (lost): #{lost.first(SHOWN).join(", ")}" if lost.any?),
       duplicates.unexplained_failure,
       ("#{unexpected.size} jobs ran that were never pushed" if unexpected.any?)].compact
    end

    def chaos_failures
      [("no process was killed" if @fleet.killed.empty?),
       ("Redis was never restarted" unless @restart),
       *outage_failures,
       ("dead capsules were not reaped: #{@outcome[:unsettled]}" if @outcome[:unsettled]),
       ("processes did not stop on TERM: #{@outcome[:unclean].join(", ")}" if @outcome[:unclean].any?)].compact
    end

    # Each process that ran through the outage must have raised from its
    # fetches and its heartbeat (else the outage tested nothing); Fleet#check!
    # has seen each live through it.
    def outage_failures
      outage.filter_map do |name, raised|
        missing = raised.reject { _2 }.keys
        "#{name} logged no #{missing.join(" or ")} error while Redis was down" if missing.any?
      end
    end

    # The freeze must have come, caught jobs and lasted longer than a
    # heartbeat's expiry (else it tested nothing).
    def freeze_failures
      return ["no process was frozen"] unless @frozen&.to
      return ["#{@frozen.worker} was frozen #{@frozen.seconds} s only"] unless @frozen.reaped?

      @frozen.held.to_a.empty? ? ["the frozen process held no job when it stopped"] : []
    end

    def outage = @outage ||= (@restart&.through || []).to_h { [_1, @fleet.raised(_1)] }

    def plan_h = @plan.to_h

    def jobs_h
      {enqueued: jids.size, completed: completed.size, discarded: discarded.size, lost: lost.size,
       lost_jids: lost.first(SHOWN),
       runs: runs.size, extra_runs: runs.size - ran.size}
    end

    def duplicates_h
      {run_more_than_once: duplicates.jobs.size, repeats: duplicates.counts, repeated_jobs: duplicates.jobs,
       repeated_unexplained: duplicates.unexplained.first(SHOWN)}
    end

    def leftovers_h = leftovers.to_h.merge(clean: leftovers.problems.empty?)

    def timing_h = {seconds: seconds.round(2), jobs_per_second: (completed.size / seconds).round(1)}

    def chaos_h
      {kills: @fleet.killed.size, replacements: @fleet.replacements, reaped: @outcome.fetch(:reaped),
       redis_restart: @restart && {at_s: @restart.at.round(2), down_s: @restart.seconds.round(3),
                                   survived: outage.keys, raised: outage},
       freeze: @frozen&.to_h&.merge(originals: runs.count { @frozen.original?(_1) })}
    end
  end
end
