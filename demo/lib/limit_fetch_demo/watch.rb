# frozen_string_literal: true

module LimitFetchDemo
  # The live part: reads the counters, shows them, and returns once every job
  # is done. Fails on a timeout, a dead Sidekiq process, or jobs that vanished.
  class Watch
    POLL = 0.2
    # All jobs have left their queues and none runs, yet some never finished.
    STALL = 5.0

    def initialize(plan, workers, timeout:)
      @plan = plan
      @workers = workers
      @timeout = timeout
      @stats = Stats.new(plan)
      @view = View.new(plan)
    end

    # Returns the last snapshot.
    def run
      started = LimitFetchDemo.monotonic
      loop do
        snapshot = @stats.snapshot
        elapsed = LimitFetchDemo.monotonic - started
        return snapshot.tap { @view.finish(_1, elapsed) } if snapshot.finished?(@plan)

        @view.update(snapshot, elapsed)
        check(snapshot, elapsed)
        sleep POLL
      end
    end

    def close = @view.close

    private

    def check(snapshot, elapsed)
      @workers.check!
      missing = @plan.total_jobs - snapshot.total(:done) - snapshot.total(:failed)
      if elapsed > @timeout
        raise Failure, "#{missing} jobs not done after #{@timeout} s " \
                       "(#{snapshot.total(:queued)} still queued, #{snapshot.total(:running)} running)"
      end
      raise Failure, "#{missing} jobs left their queues but never ran" if stalled?(snapshot, elapsed)
    end

    # True once no job has been queued or running for STALL seconds.
    def stalled?(snapshot, elapsed)
      busy = (snapshot.total(:queued) + snapshot.total(:running)).positive?
      @idle_since = busy ? nil : (@idle_since || elapsed)
      !busy && elapsed - @idle_since > STALL
    end
  end
end
