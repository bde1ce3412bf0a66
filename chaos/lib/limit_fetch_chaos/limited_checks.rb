# frozen_string_literal: true

module LimitFetchChaos
  # The checks of the LIMITED classes' jobs: whether their pushes carried
  # their job limits, and the signs that each kind of job limit was at work
  # (else a check of it would have tested nothing): jobs parked on each
  # queue that parks, a tenant of PerQueueChaosJob running in both its
  # queues at once, the raises of the tuned limit seen, jobs discarded.
  class LimitedChecks
    # `outcome`: as Checks'; `lost`: the jids lost; `tuned`: the
    # JobLimitConcurrency of Tuner::ID.
    def initialize(outcome, lost, tuned)
      @feeder = outcome.fetch(:feeder)
      @runs = outcome.fetch(:runs)
      @completed = outcome.fetch(:completed)
      @discards = outcome.fetch(:discards)
      @lost = lost
      @tuned = tuned
    end

    def problems
      [*class_problems, *parked_problems, *per_queue_problems, *tuned_problems,
       ("no DiscardChaosJob was discarded" if @discards.jids.empty?),
       *@discards.problems(@feeder.tenants)].compact
    end

    # tenant => the most of its PerQueueChaosJob runs at once, across its queues.
    def per_queue_most
      PerQueueChaosJob::TENANTS.to_h do |tenant|
        [tenant, Concurrency.peak(@runs.select { PerQueueChaosJob::QUEUES.include?(_1.queue) && _1.tenant == tenant })]
      end
    end

    private

    # Each class pushed, carrying its job limits (CARRY_NONE's: none).
    def class_problems
      @feeder.limited_h[:classes].flat_map do |name, tally|
        wrong, what = CARRY_NONE.include?(name) ? [:carried, "job limits"] : [:not_carried, "no job limits"]
        [("no #{name} was pushed" if @feeder.limited_jids.fetch(name).empty?),
         ("#{tally[wrong]} #{name} pushes carried #{what}" if tally[wrong].positive?)]
      end
    end

    def parked_problems
      @feeder.limited_h[:ticks_parked_by_queue].filter_map do |queue, ticks|
        "no job of queue #{queue} was ever seen parked" if ticks.zero?
      end
    end

    def per_queue_problems
      most = per_queue_most.values.max || 0
      return [] if most > PerQueueChaosJob::TENANT_LIMIT

      ["no PerQueueChaosJob tenant ever ran in queues #{PerQueueChaosJob::QUEUES.join(" and ")} at once " \
       "(at most #{most}): its keys' slots are not per queue"]
    end

    # A raise that took effect lets more run than the limit before it.
    def tuned_problems
      @tuned.phases.each_cons(2).filter_map do |before, after|
        next if after[:limit] <= before[:limit] || after[:most] > before[:limit]

        "#{Tuner::ID}: raised from #{before[:limit]} to #{after[:limit]}, but at most #{after[:most]} ran at once"
      end
    end
  end
end
