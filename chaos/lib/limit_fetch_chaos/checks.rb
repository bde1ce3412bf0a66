# frozen_string_literal: true

module LimitFetchChaos
  # The checks of a run: what the chaos did, what the ledger and Redis show,
  # and every failure found: the sentences its RULES give, in their order
  # (FaultChecks' for bin/chaos --fault). Report writes down what they saw.
  class Checks
    # Jids listed at most, of those lost or run more than once unexplained.
    SHOWN = 20
    # The checks, each run on the report: a failure's sentence, a list of them, or nil.
    RULES = [
      -> { lost_rule("jobs never completed (lost)") }, -> { duplicates.unexplained_failure }, -> { unexpected_rule },
      -> { limited.problems }, -> { limits.map(&:violations) }, -> { rates.problems }, -> { @tuner.problems },
      -> { "no process was killed" if @fleet.killed.empty? }, -> { "Redis was never restarted" unless @restart },
      -> { outage_rules(outage) }, -> { stop_rules }, -> { freeze_rules }, -> { @outcome.fetch(:booked).problems },
      -> { leftovers.problems }
    ].freeze

    attr_reader :failures

    # `chaos`: the Mayhem (or the Fault) that made it: its Redis restart and
    # its freeze. `outcome`: jids (pushed), completed (jids), runs,
    # leftovers, booked (Booked, once the jobs had ended), reaped (as
    # Fleet#reaped), unclean (processes TERM did not stop), unsettled (nil,
    # or the capsules still registered when dead ones should have been
    # reaped), seconds (until every job had completed or was discarded),
    # environment; here also feeder (the Feeder: the LIMITED classes' jids
    # and tenants, what their pushes carried, the parked jobs it saw),
    # discards (Discards), rate_stalls (Stalls of the rates' parked jobs),
    # recorded (RecordedStarts: the starts the gem counted for each rate).
    def initialize(plan, fleet, chaos, tuner = nil, **outcome)
      @plan = plan
      @fleet = fleet
      @chaos = chaos
      @restart = chaos.restart
      @frozen = chaos.frozen
      @tuner = tuner
      @outcome = outcome
      @failures = self.class::RULES.map { instance_exec(&_1) }.flatten.compact
    end

    def passed? = failures.empty?

    private

    def jids = @outcome.fetch(:jids)

    def completed = @outcome.fetch(:completed)

    def runs = @outcome.fetch(:runs)

    # The runs the limits are held to: all but the frozen process's woken
    # originals (Frozen#original?), which a process frozen longer than its
    # heartbeat's expiry runs on beside their second runs.
    def counted = @counted ||= runs.reject { @frozen&.original?(_1) }

    def leftovers = @outcome.fetch(:leftovers)

    # Jids neither completed nor discarded.
    def lost = @lost ||= jids - completed - discarded

    def discarded = @outcome[:discards]&.jids || []

    def lost_rule(what) = ("#{lost.size} #{what}: #{lost.first(SHOWN).join(", ")}" if lost.any?)

    # Jids that ran but were never pushed.
    def unexpected_rule
      unexpected = runs.map(&:jid).uniq - jids
      "#{unexpected.size} jobs ran that were never pushed" if unexpected.any?
    end

    def stop_rules
      [("dead capsules were not reaped: #{@outcome[:unsettled]}" if @outcome[:unsettled]),
       ("processes did not stop on TERM: #{@outcome[:unclean].join(", ")}" if @outcome[:unclean].any?)]
    end

    # Each process that ran through the outage (`raised`: name => what
    # raised in it) must have raised from its fetches and its heartbeat (but
    # `spared`), else the outage tested nothing; Fleet#check! has seen each
    # live through it.
    def outage_rules(raised, spared = [])
      raised.map do |name, seen|
        missing = seen.reject { _2 }.keys - spared
        "#{name} logged no #{missing.join(" or ")} error while Redis was down" if missing.any?
      end
    end

    # The freeze must have come, caught jobs and lasted longer than a
    # heartbeat's expiry (else it tested nothing).
    def freeze_rules
      return "no process was frozen" unless @frozen&.to
      return "#{@frozen.worker} was frozen #{@frozen.seconds} s only" unless @frozen.reaped?

      held_rule
    end

    def held_rule = ("the frozen process held no job when it stopped" if @frozen.held.to_a.empty?)

    # Each queue's Concurrency and each WatchedLimit's, the tuned one against the Tuner's schedule.
    def limits = @limits ||= queue_limits(@plan.queues) + job_limits(WatchedLimit.all)

    def queue_limits(queues) = queues.map { |queue| Concurrency.of(queue, counted.select { _1.queue == queue }, @plan) }

    def job_limits(watched)
      watched.map do |limit|
        schedule = @tuner && limit.id == Tuner::ID ? @tuner.schedule : LimitSchedule.constant(limit.limit)
        JobLimitConcurrency.of(limit.id, limit.runs_of(counted), schedule)
      end
    end

    # The rates' and the LIMITED classes' checks (Report writes down what they saw).
    def rates = @rates ||= RatesChecks.new(counted, runs, *@outcome.fetch_values(:rate_stalls, :recorded))

    def limited = @limited ||= LimitedChecks.new(@outcome.merge(runs: counted), lost, tuned)

    # The JobLimitConcurrency of the limit the Tuner changes.
    def tuned = limits.grep(JobLimitConcurrency).find { _1.id == Tuner::ID }

    def duplicates
      @duplicates ||= Duplicates.new(runs, @fleet.killed.to_h { [_1, @fleet.ended.fetch(_1)] }, @fleet.held_at_kill,
        @restart, frozen: @frozen)
    end

    # The processes that ran through the outage => what raised in each.
    def outage = @outage ||= (@restart&.through || []).to_h { [_1, @fleet.raised(_1)] }
  end
end
