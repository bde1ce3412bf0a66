# frozen_string_literal: true

module LimitFetchChaos
  # The checks of bin/chaos --fault (a FaultReport's), from the jobs' own
  # records (the ledger) and Redis, strictly:
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
  #
  # `outcome`: as Checks', with stalls (Stalls) instead of its own.
  module FaultChecks
    RULES = [
      -> { "no job was pushed" if jids.empty? }, -> { lost_rule("jobs never completed") }, -> { repeat_rules },
      -> { unexpected_rule }, -> { limits.map(&:violations) }, -> { @outcome.fetch(:stalls).problems(runs) },
      -> { @outcome.fetch(:booked).problems }, -> { leftovers.problems },
      -> { "the fault was never lifted" unless @chaos.over_at },
      -> { held_rule if @chaos.over_at && @plan.fault.kind == "freeze" }, -> { fault_outage_rules },
      -> { reaped_rules }, -> { stop_rules }
    ].freeze

    private

    def duplicates = @duplicates ||= Duplicates.new(runs, {}, {}, @restart, frozen: @frozen)

    # Queue a's and KeyedChaosJob's limits.
    def limits
      @limits ||= queue_limits(@plan.limits.keys) +
                  job_limits(WatchedLimit.all.select { _1.queues.intersect?(@plan.queues) })
    end

    # Each job run more than once unexplained, with what was seen of it.
    def repeat_rules
      unexplained = duplicates.unexplained
      [*unexplained.first(Checks::SHOWN).map { |job| "job #{job[:jid]} ran again: #{evidence(job)}" },
       ("#{unexplained.size} jobs ran more than once unexplained" if unexplained.size > Checks::SHOWN)]
    end

    def evidence(job) = job[:repeats].reject { _1[:category] }.map { _1[:evidence] }.join("; ")

    # Only for an outage longer than 2 heartbeat periods; no heartbeat
    # error is needed when Redis was stopped (a stopped Redis may hold a
    # beat until it goes on, where a shut down one refuses it at once).
    def fault_outage_rules
      return unless @restart && @restart.seconds > 2 * @plan.heartbeat_period

      outage_rules(@restart.through.to_h { [_1, @fleet.raised(_1)] },
        @plan.fault.kind == "redis-stop" ? [:heartbeat] : [])
    end

    def reaped_rules
      reaped = @outcome.fetch(:reaped)[:capsules]
      if @frozen&.reaped?
        return if reaped.between?(1, Plan::CAPSULES)

        return "#{reaped} capsules were reaped; the frozen process's #{Plan::CAPSULES} at most, at least one"
      end
      "#{reaped} capsules were reaped though no process died nor froze for longer than its expiry" unless reaped.zero?
    end
  end
end
