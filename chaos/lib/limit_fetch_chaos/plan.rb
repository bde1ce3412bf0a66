# frozen_string_literal: true

module LimitFetchChaos
  # What the chaos run does: the app (chaos/app; its config/sidekiq.yml holds
  # the queues and limits; the LIMITED classes' files, their job limits,
  # queues and tenants), how many processes, the jobs, and the pace of the
  # kills. The random choices come from two generators seeded with --seed,
  # one for the jobs' lengths and one for the kills (when, and which
  # process), so that the n-th job and the n-th kill repeat with the seed.
  class Plan
    APP = File.join(ROOT, "app")
    PROCESSES = 3
    # Capsules in each process: the default one and app.rb's "idle" one.
    CAPSULES = 2
    # Seconds; a killed process's capsule is reaped 4 periods after its last beat.
    HEARTBEAT_PERIOD = 2
    # How long each job works, in milliseconds.
    JOB_MILLIS = (5..50)
    # How long the jobs of GroupedChaosJob's TUNED tenant work: longer, so
    # that its jobs wait at its limit whatever it is (however fast the
    # machine), and each change is seen at work.
    TUNED_MILLIS = (50..100)
    # Seconds between two kills.
    KILL_EVERY = (1.5..2.5)
    # Redis restarts once the run is this far (share of the jobs completed, or
    # of --duration elapsed).
    RESTART_AT = 0.5
    # Seconds Redis stays down: longer than an idle fetch waits (2 s) and than
    # a heartbeat period, so that every process's fetches and heartbeat raise,
    # which each must live through. Shorter than a heartbeat's expiry (4
    # periods) less the two periods a capsule may go unbeaten around it: a
    # longer outage lets heartbeats expire, and the first process to beat
    # after it reaps live capsules (a limitation in README).
    REDIS_DOWN = 3.0
    # Seconds after its start that a process's Sidekiq scheduler has made its
    # first cleanup (see app.rb), with a margin: Redis goes down only once
    # every live process is older.
    SCHEDULER_WAIT = 8.0

    extend Forwardable

    def_delegators :@config, :queues, :limits, :process_limits, :concurrency
    attr_reader :options

    def initialize(options)
      @options = options
      @config = LimitFetchDemo::SidekiqConfig.load(File.join(APP, "config", "sidekiq.yml"))
      @job_random = Random.new(options.seed)
      @kill_random = Random.new(options.seed + 1)
    end

    # Jobs each queue gets in all (nil: no cap, --duration decides).
    def quota(queue)
      return nil unless options.jobs

      share, rest = options.jobs.divmod(queues.size)
      share + (queue == queues.first ? rest : 0)
    end

    def job_millis(tenant = nil) = @job_random.rand(tenant == GroupedChaosJob::TUNED ? TUNED_MILLIS : JOB_MILLIS)

    # The class of a job pushed to a queue that +classes+ share.
    def pick(classes) = classes.sample(random: @job_random)

    # A tenant of +job_class+ (a LIMITED class) for a job.
    def tenant(job_class) = job_class::TENANTS.sample(random: @job_random)

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

    def describe
      jobs = options.jobs ? "#{options.jobs} jobs" : "jobs for #{options.duration} s"
      "#{PROCESSES} Sidekiq processes x #{concurrency} threads, #{jobs} of #{JOB_MILLIS.min}-#{JOB_MILLIS.max} ms " \
        "on queues #{queues.join(", ")}, limits #{limits}, process limits #{process_limits}, and an idle capsule " \
        "of 1 thread each; job limits (1 per tenant): on k KeyedChaosJob (and 3 of the class), on g " \
        "GroupedChaosJob and CoGroupedChaosJob sharing their group's (#{Tuner::ID}'s changed at run time), " \
        "on p and q PerQueueChaosJob (per queue), on d DiscardChaosJob (the rest discarded); seed #{options.seed}"
    end
  end
end
