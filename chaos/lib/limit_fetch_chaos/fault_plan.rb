# frozen_string_literal: true

module LimitFetchChaos
  # What bin/chaos --fault KIND:SECONDS does: two Sidekiq processes
  # (chaos/app with config/faults.yml: 6 threads each, queue a limited to 2,
  # KeyedChaosJob's queue k at 1 per tenant and 3 of the class, the fair
  # queue e, the FAIR classes' queue f, their slots shared among their
  # tenants), a heartbeat
  # period of 2 s (a capsule's heartbeat expires 8 s after its last beat),
  # jobs of 3-5 s kept BACKLOG waiting per queue, and one fault (FaultSpec,
  # Fault) while jobs run: Redis restarted (SHUTDOWN, AOF) or stopped
  # (SIGSTOP of redis-server), or a Sidekiq process frozen (SIGSTOP), for
  # SECONDS. Jobs are pushed until AFTER seconds past the fault's end, then
  # the run waits for the last of them.
  class FaultPlan < Plan
    CONFIG = "config/faults.yml"
    PROCESSES = 2
    JOB_MILLIS = (3000..5000)
    # Few: enough that a slot never goes unused for want of a job (so a
    # limit is always at work, and a leaked slot stalls what waits), few
    # enough that the last are done within seconds of the pushes' end.
    BACKLOG = 4
    # Seconds of jobs after the fault: the woken process's jobs end (5 s at
    # most) and a slot it leaked would then stall the queue for longer than
    # Stalls' limit.
    AFTER = 15
    # Seconds of jobs waiting while none of theirs runs that make a stall:
    # 3 heartbeat periods, time for any beat to heal what it heals.
    STALL = HEARTBEAT_PERIOD * 3

    def fault = options.fault

    def config_file = CONFIG

    # Its config's queues alone: app.rb's "leased" capsule has no jobs here.
    def queues = @config.queues

    def processes = PROCESSES

    def backlog(_queue = nil) = BACKLOG

    # No quota: the FaultRunner stops the pushes.
    def quota(_queue) = nil

    def job_millis(_tenant = nil, _job_class = nil) = @job_random.rand(JOB_MILLIS)

    def stalled_after = 30

    def fair_classes = FAIR.map { "#{_1} (#{_1::CLASS_LIMIT} of the class, fair)" }.join(" and ")

    def describe
      "--fault #{fault}: #{PROCESSES} Sidekiq processes x #{concurrency} threads, jobs of " \
        "#{JOB_MILLIS.min / 1000}-#{JOB_MILLIS.max / 1000} s on queues #{queues.join(", ")} (#{BACKLOG} waiting " \
        "in each), limits #{limits}, KeyedChaosJob on k (1 per tenant, #{KeyedChaosJob::CLASS_LIMIT} of the " \
        "class), #{fair_queue}, #{fair_classes} on f; heartbeat period #{HEARTBEAT_PERIOD} s (expiry #{EXPIRY} s); " \
        "seed #{options.seed}"
    end
  end
end
