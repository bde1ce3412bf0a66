# frozen_string_literal: true

module LimitFetchChaos
  # bin/chaos --fault: a Runner whose chaos is one Fault on FaultPlan's two
  # processes. Pushes jobs (Feeder, FaultPlan::BACKLOG waiting per queue)
  # until FaultPlan::AFTER seconds past the fault's end, samples what waits
  # (Stalls) whenever Redis answers, then waits for every job to be done
  # (or the timeout, or a stall); returns a FaultReport.
  class FaultRunner < Runner
    private

    def start_chaos(_app)
      @fault = Fault.new(@plan, @fleet, @redis, @sidekiq, say: method(:say_at))
      @stalls = Stalls.new(Stalls.lines(@plan.queues), limit: FaultPlan::STALL)
    end

    # Nothing reaches Redis while the fault keeps it down (a stopped Redis
    # would hold every call until its timeout).
    def chaos
      started = LimitFetchChaos.monotonic
      loop do
        elapsed = LimitFetchChaos.monotonic - started
        @fleet.check!
        @fault.act(elapsed)
        completed = tick(elapsed)
        return elapsed if completed && over?(elapsed, completed)

        status(elapsed, completed) if completed
        sleep TICK
      end
    end

    # Feeds, samples what waits; returns how many jobs have completed (nil
    # while Redis is down).
    def tick(elapsed)
      return if @fault.redis_down?

      @feeder.feed(elapsed) if feeding?
      redis do |conn|
        @stalls.sample(conn)
        conn.call("SCARD", ChaosLedger::COMPLETED)
      end
    end

    def feeding? = @fault.over_at.nil? || LimitFetchChaos.monotonic < @fault.over_at + FaultPlan::AFTER

    def over?(elapsed, completed)
      return false if feeding?

      finished?(elapsed, completed)
    end

    def report(seconds, unsettled, booked, unclean)
      say "Stopped the Sidekiq processes (TERM); reading the ledger"
      redis do |conn|
        FaultReport.new(@plan, @fleet, @fault,
          jids: @feeder.jids, completed: conn.call("SMEMBERS", ChaosLedger::COMPLETED),
          runs: Run.read(conn, @fleet.ended), stalls: @stalls, booked:, leftovers: Leftovers.read(conn, @plan.queues),
          reaped: @fleet.reaped, unclean:, unsettled:, seconds:, environment: Environment.read(conn))
      end
    end

    def cleanup = [@fault, @fleet, @redis].each { _1&.stop }
  end
end
