# frozen_string_literal: true

module LimitFetchChaos
  # What the chaos run does: the app (chaos/app; its config/sidekiq.yml holds
  # the queues and limits; the LIMITED classes' files, their job limits,
  # queues and tenants), how many processes, the jobs, and the pace of the
  # kills. The random choices come from two generators seeded with --seed,
  # one for the jobs' lengths and one for the kills (when, and which
  # process), so that the n-th job and the n-th kill repeat with the seed.
  # FaultPlan, bin/chaos --fault's, is one too.
  class Plan
    APP = File.join(ROOT, "app")
    CONFIG = "config/sidekiq.yml"
    PROCESSES = 3
    # Capsules in each process: the default one and app.rb's "idle" and
    # "leased" ones.
    CAPSULES = 3
    # Seconds; a killed process's capsule is reaped 4 periods after its last beat.
    HEARTBEAT_PERIOD = 2
    # Seconds after its last beat that a capsule's heartbeat expires (the
    # gem's: 4 periods); a capsule silent longer is taken for dead and reaped.
    EXPIRY = HEARTBEAT_PERIOD * 4
    # How long each job works, in milliseconds.
    JOB_MILLIS = (5..50)
    # How long the jobs of GroupedChaosJob's TUNED tenant work: longer, so
    # that its jobs wait at its limit whatever it is (however fast the
    # machine), and each change is seen at work.
    TUNED_MILLIS = (50..100)
    # Seconds between two kills.
    KILL_EVERY = (1.5..2.5)
    # Redis restarts once the run is this far (share of the jobs completed, or
    # of --duration elapsed, the faults' own time left out: see
    # Mayhem#paused).
    RESTART_AT = 0.3
    # Seconds Redis stays down: longer than an idle fetch waits (2 s) and than
    # a heartbeat period, so that every process's fetches and heartbeat raise,
    # which each must live through; and 2.5 heartbeat expiries, so that every
    # capsule's heartbeat has expired by the time Redis is back, whenever its
    # last beat came: the first process to beat then finds every other
    # capsule silent for longer than its expiry, which it must not take for
    # dead (issue 21: today it reaps them, and their running jobs run twice
    # at once). Several expiries, not one, so that no beat's timing lets it pass.
    REDIS_DOWN = EXPIRY * 2.5
    # A live process (one that holds jobs) is frozen (SIGSTOP) once the run
    # is this far and the outage is over, for FREEZE seconds, then woken
    # (SIGCONT): 2.5 expiries,
    # so that the others reap its capsule well before it wakes, and its jobs
    # run again elsewhere while it still runs them (a process frozen that
    # long cannot be told from a dead one); once woken, it must free each of
    # its slots once and leave the limits whole.
    FREEZE_AT = 0.5
    FREEZE = EXPIRY * 2.5
    # Seconds after its start that a process's Sidekiq scheduler has made its
    # first cleanup (see app.rb), with a margin: Redis goes down only once
    # every live process is older.
    SCHEDULER_WAIT = 8.0

    extend Forwardable

    def_delegators :@config, :limits, :process_limits, :concurrency
    attr_reader :options

    def initialize(options)
      @options = options
      @config = LimitFetchDemo::SidekiqConfig.load(File.join(APP, config_file))
      @job_random = Random.new(options.seed)
      @kill_random = Random.new(options.seed + 1)
    end

    # The queues fed: the default capsule's (its config's), then
    # LeasedChaosJob's, which its capsule alone works (app.rb).
    def queues = [*@config.queues, *LeasedChaosJob::QUEUES]

    # The app's Sidekiq configuration (relative to the app directory).
    def config_file = CONFIG

    def processes = PROCESSES

    def capsules = CAPSULES

    def heartbeat_period = HEARTBEAT_PERIOD

    # Jobs kept waiting in each queue (Feeder), or in `queue`.
    def backlog(queue = nil) = Turns.backlog(queue)

    # Jobs each queue gets in all (nil: no cap, --duration decides). The
    # rated classes' queues (RatedLimit.queues) have no share of --jobs:
    # their rates let only so many start, so they are kept Plan#backlog deep
    # for as long as the others are fed, and their rates bind throughout.
    def quota(queue)
      return nil unless options.jobs && !RatedLimit.queues.include?(queue)

      shared = queues - RatedLimit.queues
      share, rest = options.jobs.divmod(shared.size)
      share + (queue == shared.first ? rest : 0)
    end

    def job_millis(tenant = nil, job_class = nil)
      return @job_random.rand(LeasedChaosJob::MILLIS) if job_class == LeasedChaosJob

      @job_random.rand(tenant == GroupedChaosJob::TUNED ? TUNED_MILLIS : JOB_MILLIS)
    end

    # Whether `queue` is fed at `elapsed` (the run's clock): in its turn
    # only, if it takes turns.
    def feeds?(queue, elapsed) = Turns.feeds?(queue, elapsed)

    # The class of a job pushed to a queue that +classes+ share.
    def pick(classes) = classes.sample(random: @job_random)

    # A tenant of +job_class+ (a LIMITED class) for a job; nil if it has
    # none. A class with PUSHES (tenant => share) gets its tenants' jobs in
    # those shares, so that their backlogs are skewed.
    def tenant(job_class)
      return job_class::TENANTS.sample(random: @job_random) unless job_class.const_defined?(:PUSHES)

      pick = @job_random.rand(job_class::PUSHES.values.sum)
      job_class::PUSHES.find { |_, share| (pick -= share).negative? }&.first
    end

    def kill_interval = @kill_random.rand(KILL_EVERY)

    def victim(processes) = processes.sample(random: @kill_random)

    # How far the run is, from 0 to 1: the larger of the share of the jobs
    # completed and the share of --duration elapsed.
    def progress(completed, elapsed)
      [(completed.fdiv(options.jobs) if options.jobs), (elapsed / options.duration if options.duration)].compact.max
    end

    # Seconds after its last beat that a capsule of a killed process is
    # reaped, at most, with a margin for a loaded machine.
    def reap_within = (HEARTBEAT_PERIOD * 5) + 20

    # Seconds of no job done, with jobs left, after which a run stops
    # waiting for them (a stall: the report says what was left), short of
    # --timeout. Not while a fault is under way.
    def stalled_after = 60

    # The plan, for the report.
    def to_h
      {processes: processes, concurrency: concurrency, queues: queues, limits: limits, process_limits: process_limits,
       heartbeat_period: heartbeat_period, **job_limits_h, job_ms: JOB_MILLIS.minmax, kill_every_s: KILL_EVERY.minmax,
       redis_down_s: REDIS_DOWN, freeze_s: FREEZE, turns_s: Turns::SECONDS,
       redis: LimitFetchTools::RedisServer::AOF.map { _1.empty? ? '""' : _1 }.join(" "),
       **options.to_h.slice(:jobs, :duration, :seed)}
    end

    def job_limits_h
      {job_limits: WatchedLimit.all.to_h { [_1.id, {queues: _1.queues, limit: _1.limit}] },
       rates: RatedLimit.all.to_h { [_1.id, {queues: _1.queues, limit: _1.limit, period_s: _1.period}] },
       limited: LIMITED.to_h { [_1.name, {queues: _1::QUEUES, tenants: _1::TENANTS}] }, fetch_lag_s: FETCH_LAG / 1e9,
       rate_slack_s: RATE_SLACK / 1e9}
    end

    def describe
      jobs = options.jobs ? "#{options.jobs} jobs" : "jobs for #{options.duration} s"
      "#{PROCESSES} Sidekiq processes x #{concurrency} threads, #{jobs} of #{JOB_MILLIS.min}-#{JOB_MILLIS.max} ms " \
        "on queues #{queues.join(", ")}, limits #{limits}, process limits #{process_limits}, and an idle capsule " \
        "of 1 thread each; job limits (1 per tenant): on k KeyedChaosJob (and 3 of the class), on o " \
        "BackingOffChaosJob (adaptive, 1..#{BackingOffChaosJob::TENANT_LIMIT}, backing off 1 run in " \
        "#{BackingOffChaosJob::BACK_OFF_ONE_IN}), on g " \
        "GroupedChaosJob and CoGroupedChaosJob sharing their group's (#{Tuner::ID}'s changed at run time), " \
        "on p and q PerQueueChaosJob (per queue), on d DiscardChaosJob (the rest discarded); #{fair_and_rates}; " \
        "seed #{options.seed}"
    end

    def fair_and_rates = "#{fair}; #{fair_queue}; #{rates}"

    def fair_queue
      "a fair queue on e: its #{FairQueueChaosJob::FAIR_LIMIT} slots among FairQueueChaosJob's " \
        "#{FairQueueChaosJob::TENANTS.size} keys pushed #{FairQueueChaosJob::PUSHES.values.join(":")} " \
        "(#{FairQueueChaosJob::TENANT_LIMIT} each at most) and KeylessFairQueueChaosJob (no key: its class)"
    end

    def fair
      weights = WeightedFairChaosJob::WEIGHTS.map { _1.join(" ") }.join(", ")
      "fair shares on f: FairChaosJob's #{FairChaosJob::CLASS_LIMIT} slots among #{FairChaosJob::PUSHES.size} " \
        "tenants pushed #{FairChaosJob::PUSHES.values.join(":")}, WeightedFairChaosJob's " \
        "#{WeightedFairChaosJob::CLASS_LIMIT} by weight (#{weights}, others 1)"
    end

    def rates
      "rates on #{RatedChaosJob::QUEUES.join(", ")}: RatedChaosJob #{RatedChaosJob::LIMIT} starts per " \
        "#{RatedChaosJob::PERIOD} s of the class, TenantRatedChaosJob #{TenantRatedChaosJob::LIMIT} per " \
        "#{TenantRatedChaosJob::PERIOD} s per tenant (#{TenantRatedChaosJob::TENANTS.size}); #{Turns.describe}"
    end
  end
end
