# frozen_string_literal: true

module LimitFetchBench
  # What the fair section's scenarios (FairScenarios) do on the `sidekiq`
  # processes (CliFleet): push a run's jobs (FairPusher; their jids kept),
  # read Redis's clock, wait for the run's jobs or tenants, set the run's
  # fast key (FairJobs), read its records and its tally (FairTally). A
  # wait gives up after `drain_timeout` s (what was not done shows in the
  # tally); a sidekiq process that exited ends it (Failure).
  class FairDriver
    def initialize(redis:, pusher:, fleet:, sizes:)
      @redis = redis
      @pusher = pusher
      @fleet = fleet
      @job_ms = sizes.fetch("job_ms")
      @timeout = sizes.fetch("drain_timeout")
      @jids = Hash.new { |hash, run| hash[run] = [] }
    end

    # Redis's clock, seconds.
    def now
      seconds, micros = @redis.call("TIME")
      Integer(seconds) + (Integer(micros) / 1e6)
    end

    # Pushes `groups` ([[tenant, count], ...]) in order; [start, end] of the
    # push by Redis's clock.
    def push(job, run, groups, record: true)
      started = now
      args = groups.flat_map { |tenant, count| Array.new(count) { [tenant, @job_ms, run, record] } }
      @jids[run].concat(@pusher.bulk_jids(job, FairJobs::QUEUE, args))
      [started, now]
    end

    def pause_until(at)
      left = at - now
      sleep left if left.positive?
    end

    # Until the run's tenants of `counts` ({tenant => jobs}; nil: all its
    # jobs) are done.
    def wait_done(run, counts = nil)
      wait { done?(run, counts) }
    end

    # Until each of `tenants` started a job of the run, at most `seconds`.
    def wait_started(run, tenants, seconds)
      wait(seconds) { @redis.call("SMISMEMBER", FairJobs.key(run, "started"), *tenants).all?(1) }
    end

    # Sets the run's fast key `seconds` from now; the moment it did.
    def fast_after(run, seconds)
      sleep seconds if seconds.positive?
      at = now
      @redis.call("SET", FairJobs.key(run, "fast"), "1")
      at
    end

    # The run's records, once every job of it is done.
    def records(run)
      wait_done(run)
      FairFigures.records(@redis.call("LRANGE", FairJobs.key(run, "records"), 0, -1))
    end

    def tally(run) = FairTally.new(@redis, run, @jids[run]).to_h

    private

    def wait(seconds = @timeout)
      deadline = LimitFetchBench.monotonic + seconds
      until yield || LimitFetchBench.monotonic > deadline
        @fleet.check!
        sleep 0.02
      end
    end

    def done?(run, counts)
      done = @redis.call("HGETALL", FairJobs.key(run, "tenants")).transform_values(&:to_i)
      return done.values.sum >= @jids[run].size unless counts

      counts.all? { |tenant, count| done[tenant].to_i >= count }
    end
  end
end
