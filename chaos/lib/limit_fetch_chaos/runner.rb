# frozen_string_literal: true

module LimitFetchChaos
  # Runs the chaos from start to end and returns its Report; stops whatever
  # it started, whatever happens. Raises Failure when it cannot go on (Redis or
  # a Sidekiq process would not start, a process exited by itself).
  # FaultRunner (bin/chaos --fault) is one too, with a chaos of its own.
  class Runner
    include Harness

    def initialize(options, out: $stdout, plan: Plan.new(options))
      @plan = plan
      @out = out
    end

    private

    def start_chaos(app)
      @mayhem = Mayhem.new(@plan, @fleet, @redis, @sidekiq, say: method(:say_at))
      @tuner = Tuner.new(app, @redis.url, say: method(:say_at))
      @rate_stalls = Stalls.new(Stalls.rate_lines, limit: Stalls::RATE_STALL)
    end

    # Feeds, changes a limit, kills, restarts and freezes until every job
    # pushed has completed (or was discarded), or the timeout after the last
    # push, or a stall (Plan#stalled_after); returns the seconds that took.
    # The run's own clock (`clock`: for --duration, the pushes and the
    # progress) stands still through the faults (Mayhem#paused).
    def chaos
      started = LimitFetchChaos.monotonic
      loop do
        elapsed = LimitFetchChaos.monotonic - started
        clock = elapsed - @mayhem.paused
        completed = tick(clock)
        return elapsed.tap { @tuner.finish } if over?(elapsed, clock, completed)

        act(elapsed, @plan.progress(completed, clock))
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

    # Checks the processes and feeds them, samples the rates' parked jobs
    # (Stalls.rate_lines); returns how many jobs have completed or were
    # discarded.
    def tick(elapsed)
      @fleet.check!
      @feeder.feed(elapsed)
      redis do |conn|
        @rate_stalls.sample(conn)
        Discards.settled(conn)
      end
    end

    def over?(elapsed, clock, completed)
      return false unless @feeder.done?(clock) && !@mayhem.busy?

      finished?(elapsed, completed)
    end

    def report(seconds, unsettled, booked, unclean)
      say "Stopped the Sidekiq processes (TERM); reading the ledger"
      redis do |conn|
        completed = conn.call("SMEMBERS", ChaosLedger::COMPLETED)
        Report.new(@plan, @fleet, @mayhem, @tuner,
          jids: @feeder.jids, completed:, runs: Run.read(conn, @fleet.ended),
          leftovers: Leftovers.read(conn, @plan.queues), booked:, feeder: @feeder, discards: discards(conn, completed),
          reaped: @fleet.reaped, rate_stalls: @rate_stalls, recorded: RecordedStarts.read(@redis.dir), unclean:,
          unsettled:, seconds:, environment: Environment.read(conn))
      end
    end

    def discards(conn, completed)
      Discards.read(conn, @fleet.logs, pushed: @feeder.limited_jids.fetch(Discards::NAME), completed:)
    end

    def cleanup = [@mayhem, @tuner, @fleet, @redis].each { _1&.stop }
  end
end
