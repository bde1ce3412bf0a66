# frozen_string_literal: true

module LimitFetchChaos
  # The outcome of a run: what the chaos did, what the ledger and Redis show,
  # and every failure found. #to_h is what goes to results/latest.json.
  class Report
    # Jids listed at most, of those lost or run more than once unexplained.
    SHOWN = 20

    attr_reader :failures

    # `outcome`: jids (pushed), completed (jids), runs, leftovers, keyed
    # (Feeder#keyed_h: KeyedChaosJob's jids, what its pushes carried), reaped (as
    # Fleet#reaped), unclean (processes TERM did not stop), unsettled (nil, or
    # the capsules still registered when dead ones should have been reaped),
    # seconds (until every job had completed), environment.
    def initialize(plan, fleet, restart, **outcome)
      @plan = plan
      @fleet = fleet
      @restart = restart
      @outcome = outcome
      @failures = job_failures + keyed_failures + (concurrency + job_limits).flat_map(&:violations) +
                  chaos_failures + leftovers.problems
    end

    def passed? = failures.empty?

    def to_h
      {passed: passed?, failures: failures, environment: @outcome.fetch(:environment), plan: plan_h,
       jobs: jobs_h.merge(duplicates_h), keyed: keyed_h, **limits_h,
       chaos: chaos_h, redis_after_stop: leftovers_h, timing: timing_h}
    end

    private

    def jids = @outcome.fetch(:jids)

    def completed = @outcome.fetch(:completed)

    def runs = @outcome.fetch(:runs)

    def leftovers = @outcome.fetch(:leftovers)

    def seconds = @outcome.fetch(:seconds)

    def lost = @lost ||= jids - completed

    def concurrency
      @concurrency ||= @plan.queues.map { |queue| Concurrency.of(queue, runs.select { _1.queue == queue }, @plan) }
    end

    # KeyedChaosJob's class limit, then each tenant's.
    def job_limits = @job_limits ||= JobLimitConcurrency.of_keyed(runs)

    def carried = @outcome.fetch(:keyed)

    def keyed = carried.fetch(:jids)

    def keyed_failures
      [("no KeyedChaosJob was pushed" if keyed.empty?),
       ("#{carried[:not_carried]} KeyedChaosJob pushes carried no job limits" if carried[:not_carried].positive?),
       ("no KeyedChaosJob was ever seen parked" if keyed.any? && carried[:parked_most].zero?)].compact
    end

    def keyed_h
      {enqueued: keyed.size, completed: (keyed & completed).size, lost: (keyed & lost).size,
       **carried.except(:jids), tenants: KeyedChaosJob::TENANTS.size}
    end

    def limits_h
      {concurrency: concurrency.to_h { [_1.queue, _1.to_h.except(:queue)] },
       job_limits: job_limits.to_h { [_1.id, _1.to_h.except(:id)] }}
    end

    def duplicates
      @duplicates ||= Duplicates.new(runs, @fleet.killed.to_h { [_1, @fleet.ended.fetch(_1)] }, @restart)
    end

    # Jids with a run in the ledger.
    def ran = @ran ||= runs.map(&:jid).uniq

    # Jids that ran but were never pushed.
    def unexpected = ran - jids

    def job_failures
      unexplained = duplicates.unexplained.size
      [("#{lost.size} jobs never completed (lost): #{lost.first(SHOWN).join(", ")}" if lost.any?),
       ("#{unexplained} jobs ran more than once unexplained" if unexplained.positive?),
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

    def outage = @outage ||= (@restart&.through || []).to_h { [_1, @fleet.raised(_1)] }

    def plan_h
      {processes: Plan::PROCESSES, concurrency: @plan.concurrency, queues: @plan.queues, limits: @plan.limits,
       process_limits: @plan.process_limits, heartbeat_period: Plan::HEARTBEAT_PERIOD,
       job_limits: {class: KeyedChaosJob.name, queue: KeyedChaosJob::QUEUE, tenants: KeyedChaosJob::TENANTS,
                    per_tenant: KeyedChaosJob::TENANT_LIMIT, per_class: KeyedChaosJob::CLASS_LIMIT},
       job_ms: Plan::JOB_MILLIS.minmax, kill_every_s: Plan::KILL_EVERY.minmax, redis_down_s: Plan::REDIS_DOWN,
       redis: LimitFetchTools::RedisServer::AOF.map { _1.empty? ? '""' : _1 }.join(" "),
       **@plan.options.to_h.slice(:jobs, :duration, :seed)}
    end

    def jobs_h
      {enqueued: jids.size, completed: completed.size, lost: lost.size, lost_jids: lost.first(SHOWN),
       runs: runs.size, extra_runs: runs.size - ran.size}
    end

    def duplicates_h
      {run_more_than_once: duplicates.jobs, repeated_after_kill: duplicates.by_kill,
       repeated_after_restart: duplicates.by_restart, repeated_unexplained: duplicates.unexplained.first(SHOWN)}
    end

    def leftovers_h = leftovers.to_h.merge(clean: leftovers.problems.empty?)

    def timing_h = {seconds: seconds.round(2), jobs_per_second: (completed.size / seconds).round(1)}

    def chaos_h
      {kills: @fleet.killed.size, replacements: @fleet.replacements, reaped: @outcome.fetch(:reaped),
       redis_restart: @restart && {at_s: @restart.at.round(2), down_s: @restart.seconds.round(3),
                                   survived: outage.keys, raised: outage}}
    end
  end
end
