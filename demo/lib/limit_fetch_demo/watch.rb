# frozen_string_literal: true

module LimitFetchDemo
  # The live part: reads the counters and the Spotlight, shows them, and
  # returns once every job is done. Fails on a timeout, a dead Sidekiq
  # process, or jobs that vanished.
  class Watch
    POLL = 0.2
    # All jobs have left their queues and none runs, yet some never finished.
    STALL = 5.0

    attr_reader :spotlight

    # `screenshot`: a Screenshot, offered each reading, or nil.
    def initialize(plan, workers, timeout:, screenshot: nil)
      @plan = plan
      @screenshot = screenshot
      @workers = workers
      @timeout = timeout
      @stats = Stats.new(plan)
      @spotlight = Spotlight.new(plan)
      @view = View.new(plan)
    end

    # Returns the last snapshot.
    def run
      started = LimitFetchDemo.monotonic
      loop do
        snapshot = @stats.snapshot
        now = @spotlight.sample
        elapsed = LimitFetchDemo.monotonic - started
        return snapshot.tap { @view.finish(_1, now, elapsed) } if snapshot.finished?(@plan)

        show(snapshot, now, elapsed)
        sleep POLL
      end
    end

    def close = @view.close

    private

    def show(snapshot, now, elapsed)
      @view.update(snapshot, now, elapsed)
      @screenshot&.offer(now)
      check(snapshot, now, elapsed)
    end

    def check(snapshot, now, elapsed)
      @workers.check!
      missing = @plan.total_jobs - snapshot.total(:done) - snapshot.total(:failed)
      if elapsed > @timeout
        raise Failure, "#{missing} jobs not done after #{@timeout} s " \
                       "(#{snapshot.total(:queued)} still queued, #{snapshot.total(:running)} running)"
      end
      raise Failure, "#{missing} jobs left their queues but never ran" if stalled?(snapshot, now, elapsed)
    end

    # True once no job has been queued, parked or running for STALL seconds.
    def stalled?(snapshot, now, elapsed)
      busy = (snapshot.total(:queued) + snapshot.total(:running) + now.hot_parked + now.rated_parked).positive?
      @idle_since = busy ? nil : (@idle_since || elapsed)
      !busy && elapsed - @idle_since > STALL
    end
  end
end
