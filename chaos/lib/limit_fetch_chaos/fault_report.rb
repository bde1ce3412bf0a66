# frozen_string_literal: true

module LimitFetchChaos
  # The outcome of bin/chaos --fault, from the jobs' own records (the
  # ledger) and Redis, strictly:
  #
  # - every job pushed completed, none ran that was not pushed;
  # - every job ran once, but, after a freeze longer than a heartbeat's
  #   expiry, a job the frozen process held when it stopped, which may run
  #   once more elsewhere (Duplicates' frozen_reaped), even at the same time;
  # - no limit (queue a's, KeyedChaosJob's per tenant and of the class) went
  #   over at any moment, counting every run but the frozen process's woken
  #   originals (Frozen#original?);
  # - no stall: jobs waiting while none of theirs ran for longer than
  #   FaultPlan::STALL (Stalls);
  # - nothing booked 2 heartbeat periods after the last job ended (Booked),
  #   nothing of the gem's left once the processes stopped (Leftovers; the
  #   outage key while its TTL runs);
  # - the fault bit: Redis's made every process's heartbeat and fetches
  #   raise (when longer than 2 periods, which a beat cannot miss); a freeze
  #   caught jobs; no capsule was reaped, but after a freeze longer than
  #   the expiry, when the frozen process's was (else it tested nothing).
  class FaultReport
    SHOWN = 20

    attr_reader :failures

    # `outcome`: jids, completed, runs, stalls (Stalls), booked, leftovers,
    # reaped (Fleet#reaped), unclean, unsettled, seconds, environment.
    def initialize(plan, fleet, fault, **outcome)
      @plan = plan
      @fleet = fleet
      @fault = fault
      @frozen = fault.frozen
      @outcome = outcome
      @failures = find_failures
    end

    def passed? = failures.empty?

    def to_h
      {passed: passed?, failures: failures, environment: @outcome.fetch(:environment), fault: fault_h,
       jobs: jobs_h, limits: limits.to_h { [_1.respond_to?(:queue) ? "queue #{_1.queue}" : _1.id, _1.to_h] },
       stalls: stalls, **@outcome.slice(:booked, :leftovers).transform_values(&:to_h),
       seconds: @outcome.fetch(:seconds).round(1)}
    end

    private

    def find_failures
      [*job_failures, *limits.flat_map(&:violations), *@outcome.fetch(:stalls).problems(runs),
       *@outcome.fetch(:booked).problems, *@outcome.fetch(:leftovers).problems, *fault_failures]
    end

    def runs = @outcome.fetch(:runs)

    def jids = @outcome.fetch(:jids)

    def lost = @lost ||= jids - @outcome.fetch(:completed)

    def duplicates = @duplicates ||= Duplicates.new(runs, {}, {}, @fault.restart, frozen: @frozen)

    def counted = @counted ||= runs.reject { @frozen&.original?(_1) }

    # Queue a's and KeyedChaosJob's limits.
    def limits = @limits ||= queue_limits + job_limits

    def queue_limits
      @plan.limits.keys.map { |queue| Concurrency.of(queue, counted.select { _1.queue == queue }, @plan) }
    end

    def job_limits
      WatchedLimit.all.select { _1.queues.intersect?(@plan.queues) }.map do |watched|
        JobLimitConcurrency.of(watched.id, watched.runs_of(counted), LimitSchedule.constant(watched.limit))
      end
    end

    def stalls = @stalls ||= @outcome.fetch(:stalls).found(runs)

    # Jids that ran but were never pushed.
    def unexpected = runs.map(&:jid).uniq - jids

    def job_failures
      [("no job was pushed" if jids.empty?),
       ("#{lost.size} jobs never completed: #{lost.first(SHOWN).join(", ")}" if lost.any?),
       *repeat_failures, ("#{unexpected.size} jobs ran that were never pushed" if unexpected.any?)].compact
    end

    # Each job run more than once unexplained, with what was seen of it.
    def repeat_failures
      unexplained = duplicates.unexplained
      [*unexplained.first(SHOWN).map { |job| "job #{job[:jid]} ran again: #{evidence(job)}" },
       ("#{unexplained.size} jobs ran more than once unexplained" if unexplained.size > SHOWN)]
    end

    def evidence(job) = job[:repeats].reject { _1[:category] }.map { _1[:evidence] }.join("; ")

    def fault_failures
      [*injected_failures, *outage_failures, *reaped_failures,
       ("dead capsules were not reaped: #{@outcome[:unsettled]}" if @outcome[:unsettled]),
       ("processes did not stop on TERM: #{@outcome[:unclean].join(", ")}" if @outcome[:unclean].any?)].compact
    end

    def injected_failures
      return ["the fault was never lifted"] unless @fault.over_at
      return [] unless @plan.fault.kind == "freeze"

      ["the frozen process held no job when it stopped"] if @frozen.held.to_a.empty?
    end

    # Each process must have raised from its fetches while Redis was down
    # (else the outage tested nothing), when it lasted longer than 2
    # heartbeat periods, and from its heartbeat when Redis was shut down
    # (refused at once; a stopped Redis may hold a beat until it goes on).
    def outage_failures
      restart = @fault.restart
      return [] unless restart && restart.seconds > 2 * @plan.heartbeat_period

      restart.through.filter_map do |name|
        missing = @fleet.raised(name).reject { _2 }.keys - (@plan.fault.kind == "redis-stop" ? [:heartbeat] : [])
        "#{name} logged no #{missing.join(" or ")} error while Redis was down" if missing.any?
      end
    end

    def reaped_failures
      reaped = @outcome.fetch(:reaped)[:capsules]
      if @frozen&.reaped?
        return [] if reaped.between?(1, Plan::CAPSULES)

        return ["#{reaped} capsules were reaped; the frozen process's #{Plan::CAPSULES} at most, at least one"]
      end
      reaped.zero? ? [] : ["#{reaped} capsules were reaped though no process died nor froze for longer than its expiry"]
    end

    def fault_h
      {spec: @plan.fault.to_s, redis: @fault.restart&.then { {at_s: _1.at.round(2), down_s: _1.seconds.round(3)} },
       freeze: @frozen&.to_h&.merge(originals: runs.count { @frozen.original?(_1) }), reaped: @outcome.fetch(:reaped)}
    end

    def jobs_h
      {pushed: jids.size, completed: @outcome.fetch(:completed).size, lost: lost.size, runs: runs.size,
       repeats: duplicates.counts, repeated_jobs: duplicates.jobs}
    end
  end
end
