# frozen_string_literal: true

module LimitFetchChaos
  # Runs the chaos from start to end and returns its Report; stops whatever
  # it started, whatever happens. Raises Failure when it cannot go on (Redis or
  # a Sidekiq process would not start, a process exited by itself).
  class Runner
    TICK = 0.1
    STATUS_EVERY = 5.0

    def initialize(options, out: $stdout)
      @plan = Plan.new(options)
      @out = out
    end

    # The app directory (the processes' logs, Redis's AOF) is removed after a
    # run that passed, and kept for one that failed or was cut short.
    def run
      passed = false
      dir = Dir.mktmpdir("limit-fetch-chaos-")
      say "#{@plan.describe}; app and Redis in #{dir}"
      attempt(dir).tap { passed = _1.passed? }
    ensure
      passed ? FileUtils.rm_rf(dir) : say("Kept the app directory, with the processes' logs: #{dir}")
    end

    private

    def attempt(dir)
      start(dir)
      seconds = chaos
      unsettled = settle
      report(seconds, unsettled, @fleet.stop)
    ensure
      cleanup
    end

    def start(dir)
      app = LimitFetchDemo::App.new(dir, template: Plan::APP).create
      start_redis(dir)
      @fleet = Fleet.new(app, @redis.url, @plan).start
      settled_within?(60) or raise Failure, "the Sidekiq processes did not start:\n#{@fleet.tails}"
      @feeder = Feeder.new(@plan, @sidekiq)
      @mayhem = Mayhem.new(@plan, @fleet, @redis, @sidekiq, say: method(:say_at))
      @tuner = Tuner.new(app, @redis.url, say: method(:say_at))
    end

    # The run's Redis, and a Sidekiq configuration of the driver's own that
    # talks to it (the driver pushes the jobs and reads the ledger). AOF with
    # an fsync before every write is answered: whatever Redis told a job or
    # the gem it had written survives the restart, so a lost job or slot is
    # the gem's doing, never the persistence's. No RDB snapshots: the restart
    # loads the AOF alone.
    def start_redis(dir)
      ENV["LIMIT_FETCH_SERVER"] = @plan.options.server # what LimitFetchTools::RedisServer runs
      @redis = LimitFetchTools::RedisServer.new(dir: dir, aof: true).start
      @sidekiq = Sidekiq::Config.new.tap do |config|
        config.redis = {url: @redis.url}
        config.logger.level = :warn
      end
    end

    # Feeds, changes a limit, kills and restarts until every job pushed has
    # completed (or was discarded), or the timeout after the last push;
    # returns the seconds that took.
    def chaos
      started = LimitFetchChaos.monotonic
      loop do
        elapsed = LimitFetchChaos.monotonic - started
        completed = tick(elapsed)
        return elapsed.tap { @tuner.finish } if over?(elapsed, completed)

        act(elapsed, @plan.progress(completed, elapsed))
        status(elapsed, completed)
        sleep TICK
      end
    end

    # No Redis outage while the limit is being changed, which follows the
    # pushes' pace (see Feeder#pace).
    def act(elapsed, progress)
      @tuner.act(elapsed, @feeder.pace || progress, parked: @feeder.parked_now(Tuner::PARKED))
      @mayhem.act(elapsed, progress, outage_ok: !@tuner.busy?)
    end

    # Checks the processes and feeds them; returns how many jobs have
    # completed or were discarded.
    def tick(elapsed)
      @fleet.check!
      @feeder.feed(elapsed)
      redis { Discards.settled(_1) }
    end

    def over?(elapsed, completed)
      return false unless @feeder.done?(elapsed)

      @fed_at ||= elapsed
      completed >= @feeder.jids.size || elapsed - @fed_at > @plan.options.timeout
    end

    def status(elapsed, completed)
      return if @status_at && elapsed - @status_at < STATUS_EVERY

      @status_at = elapsed
      say_at(elapsed,
        "#{completed} of #{@feeder.jids.size} jobs done (completed or discarded); #{@fleet.names.join(" ")}")
    end

    # Waits until the dead processes' capsules are reaped and the last
    # replacements registered; nil when they are, else what is registered.
    def settle
      say "Every job has completed (or the timeout passed); waiting for the dead capsules to be reaped"
      return if settled_within?(@plan.reap_within)

      redis { |conn| conn.call("SMEMBERS", KEYS::CAPSULES) }
    end

    def settled_within?(timeout)
      deadline = LimitFetchChaos.monotonic + timeout
      until redis { @fleet.settled?(_1) }
        return false if LimitFetchChaos.monotonic > deadline

        @fleet.check!
        sleep TICK
      end
      true
    end

    def report(seconds, unsettled, unclean)
      say "Stopped the Sidekiq processes (TERM); reading the ledger"
      redis do |conn|
        completed = conn.call("SMEMBERS", ChaosLedger::COMPLETED)
        discards = Discards.read(conn, @fleet.logs, pushed: @feeder.limited_jids.fetch(Discards::NAME), completed:)
        Report.new(@plan, @fleet, @mayhem.restart, @tuner,
          jids: @feeder.jids, completed:, runs: Run.read(conn, @fleet.ended),
          leftovers: Leftovers.read(conn, @plan.queues), feeder: @feeder, discards:, reaped: @fleet.reaped,
          unclean:, unsettled:, seconds:, environment: Environment.read(conn))
      end
    end

    def redis(&) = @sidekiq.redis(&)

    def cleanup = [@tuner, @fleet, @redis].each { _1&.stop }

    def say(message) = @out.puts("==> #{message}")

    def say_at(elapsed, message) = say("#{elapsed.round(1).to_s.rjust(5)} s  #{message}")
  end
end
