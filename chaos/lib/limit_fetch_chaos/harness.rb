# frozen_string_literal: true

module LimitFetchChaos
  # What Runner and FaultRunner share: a run in an app directory of its own
  # (the processes' logs, Redis's AOF), its Redis and Fleet, the wait for
  # dead capsules to be reaped, what the gem books after the last job
  # (Booked), the stop, and what they say. Each brings #start_chaos, #chaos
  # (returns its seconds), #report and #cleanup; @plan, @out.
  module Harness
    TICK = 0.1
    STATUS_EVERY = 5.0

    # The app directory (the processes' logs, Redis's AOF) is removed after a
    # run that passed, and kept for one that failed or was cut short: in the
    # checkout's tmp/, not the system's, which bin/sandbox empties as its
    # command exits.
    RUNS = File.expand_path("../../../tmp", __dir__)

    def run
      passed = false
      dir = Dir.mktmpdir("limit-fetch-chaos-", FileUtils.mkdir_p(RUNS).first)
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
      booked = Booked.after_jobs(@sidekiq, @fleet.ended, @plan.heartbeat_period)
      report(seconds, unsettled, booked, @fleet.stop)
    ensure
      cleanup
    end

    def start(dir)
      app = LimitFetchDemo::App.new(dir, template: Plan::APP).create
      start_redis(dir)
      @fleet = Fleet.new(app, @redis.url, @plan).start
      settled_within?(60) or raise Failure, "the Sidekiq processes did not start:\n#{@fleet.tails}"
      @feeder = Feeder.new(@plan, @sidekiq)
      start_chaos(app)
    end

    # The run's Redis, and a Sidekiq configuration of the driver's own that
    # talks to it (the driver pushes the jobs and reads the ledger). AOF with
    # an fsync before every write is answered: whatever Redis told a job or
    # the gem it had written survives the restart, so a lost job or slot is
    # the gem's doing, never the persistence's. No RDB snapshots: the restart
    # loads the AOF alone. No rewrite of the AOF: it keeps every write, which
    # RecordedStarts reads.
    def start_redis(dir)
      ENV["LIMIT_FETCH_SERVER"] = @plan.options.server # what LimitFetchTools::RedisServer runs
      @redis = LimitFetchTools::RedisServer.new(dir: dir, aof: true, args: %w[--auto-aof-rewrite-percentage 0]).start
      @sidekiq = Sidekiq::Config.new.tap do |config|
        config.redis = {url: @redis.url}
        config.logger.level = :warn
      end
    end

    # Once the pushing is over (the first call): true when every job was
    # done, the timeout after the last push passed, or nothing was done for
    # too long.
    def finished?(elapsed, completed)
      @fed_at ||= elapsed
      completed >= @feeder.jids.size || elapsed - @fed_at > @plan.options.timeout || stalled?(elapsed, completed)
    end

    # True once no job was done for Plan#stalled_after seconds: a stall,
    # which the report shows (jobs lost, slots still booked).
    def stalled?(elapsed, completed)
      @done_at = elapsed if completed != @done
      @done = completed
      return false unless elapsed - @done_at > @plan.stalled_after

      say_at(elapsed, "no job done for #{@plan.stalled_after} s: a stall; giving up on the rest")
      true
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

    def redis(&) = @sidekiq.redis(&)

    def say(message) = @out.puts("==> #{message}")

    def say_at(elapsed, message) = say("#{elapsed.round(1).to_s.rjust(5)} s  #{message}")
  end
end
