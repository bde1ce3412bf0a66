# frozen_string_literal: true

module LimitFetchBench
  # One run of the rate section's hot-key workload: an embedded Sidekiq of
  # the variant (LimitFetch with a rate per tenant, or BasicFetch with a
  # reschedule-based limiter, SeedRate) starts on an empty queue and
  # settles; then the hot tenant's backlog and, behind it, 100 other
  # tenants' jobs are pushed at once (RatePusher#rated_hot_key), and it is
  # timed from the start of the push until every job ran. Reported: each
  # other tenant's first start and the hot tenant's last (seconds from the
  # start of the push), the least time the rate allows for the hot backlog
  # (RateWindow.ideal), the most of the hot tenant's starts within any
  # window of the rate's period (for LimitFetch, from the starts its rate
  # counted in Redis, StartsSampler; for the limiter, from inside the
  # jobs), jobs rescheduled, and Redis commands, round trips, Redis CPU and
  # this process's CPU per job executed.
  class RateHotRun
    SETTLE = 0.5
    GUARDS = {rate_reschedule: SeedRate}.freeze

    def initialize(spec)
      @spec = spec
      @variant = Variant[spec["variant"]]
      @hot_jobs = spec["rate_hot_jobs"]
      @recorder = Recorder.current = Recorder.new
      @tracker = RateTracker.new(LimitFetchBench.monotonic, KeyedVariants::HOT_TENANT)
      @probe = RedisProbe.new(spec["redis_url"])
    end

    def run
      sidekiq = EmbeddedSidekiq.new(@variant, url: @spec["server_url"], recorder: @recorder, log: @spec["log"])
      configure(sidekiq.config)
      sidekiq.prepare.start
      sleep SETTLE
      measured = measure
      sidekiq.stop
      result(measured)
    end

    private

    # Outermost, the guard: a job it reschedules never reaches the Recorder,
    # nor the RateTracker, innermost.
    def configure(config)
      config.server_middleware.add(TenantTracker::Middleware, @tracker)
      guard = GUARDS[@variant.guard]
      return unless guard

      config.server_middleware.prepend(guard)
      guard.configure(config)
    end

    def measure
      sampler = StartsSampler.new(@spec["redis_url"], starts_key).start if @variant.keyed
      window = Window.new(@probe).open
      push
      wait_until_done
      window.close.merge("redis_starts" => sampler&.stop&.times, "sampler_calls" => sampler&.calls || 0)
    end

    # The run's origin is the start of the push.
    def push
      pushed_at = @tracker.origin = LimitFetchBench.monotonic
      pusher = RatePusher.new(@spec["redis_url"])
      @jobs = pusher.rated_hot_key(@hot_jobs, @variant.keyed)
      @push_seconds = LimitFetchBench.monotonic - pushed_at
      @recorder.expect(@jobs)
    ensure
      pusher&.close
    end

    def wait_until_done
      return if @recorder.done_within?(@spec["timeout"])

      raise Failure, "#{@recorder.done} of #{@jobs} jobs done after #{@spec["timeout"]} s"
    end

    def starts_key
      GemKeys.job_starts(Sidekiq::LimitFetch::JobLimits.declared(TenantRatedJob).key_id(KeyedVariants::HOT_TENANT))
    end

    def result(measured)
      commands = measured["commands"]
      commands = commands.merge("zrange" => commands.fetch("zrange", 0) - measured["sampler_calls"])
      measured.except("redis_starts").merge(hot(measured["redis_starts"]), per_executed(measured, commands),
        "commands" => commands, "jobs" => @jobs, "hot_jobs" => @hot_jobs, "push_seconds" => @push_seconds,
        "executed" => @tracker.executed, "rescheduled" => @recorder.rescheduled,
        "cold_first_start_s" => @tracker.first_starts_except(KeyedVariants::HOT_TENANT))
    end

    # The hot tenant's pace: its last start, the least the rate allows, and
    # the most of its starts within any window of the rate's period, from
    # inside the jobs and, for LimitFetch, as its rate counted them.
    def hot(redis_starts)
      limit, period = RateVariants::HOT_RATE
      starts = @tracker.starts
      {"rate" => [limit, period], "hot_last_start_s" => starts.last,
       "hot_ideal_s" => RateWindow.ideal(@hot_jobs, limit, period),
       "hot_most_in_window_perform" => RateWindow.most(starts, period),
       "hot_most_in_window_counted" => redis_starts && RateWindow.most(redis_starts, period),
       "hot_starts_counted" => redis_starts&.size}
    end

    def per_executed(measured, commands)
      executed = @tracker.executed
      {"commands_per_executed_job" => commands.values.sum.fdiv(executed),
       "round_trips_per_executed_job" => measured["round_trips"].values.sum.fdiv(executed),
       "redis_cpu_us_per_executed_job" => measured["redis_cpu_s"] * 1e6 / executed,
       "process_cpu_us_per_executed_job" => measured["process_cpu_s"] * 1e6 / executed}
    end
  end
end
