# frozen_string_literal: true

module LimitFetchBench
  # One run of the hot-key workload (KeyedPusher#hot_key): the hot tenant's
  # backlog queued ahead of 100 other tenants' jobs, an embedded Sidekiq of
  # the variant (LimitFetch with or without job limits, or BasicFetch with a
  # seed's guard) timed until every job ran or was dropped. Reported: the
  # hot tenant's most running at once, each other tenant's first start
  # (seconds from the start of the run), the longest the hot key's parked
  # list grew, and Redis commands, round trips, Redis CPU and this process's
  # CPU (every thread's) per job executed.
  class HotKeyRun
    GUARDS = {reschedule: SeedReschedule, lock: SeedLock}.freeze

    def initialize(spec)
      @spec = spec
      @variant = Variant[spec["variant"]]
      @recorder = Recorder.current = Recorder.new
      @tracker = TenantTracker.new(LimitFetchBench.monotonic)
      @probe = RedisProbe.new(spec["redis_url"])
    end

    def run
      @jobs = push
      @recorder.expect(@jobs)
      sidekiq = EmbeddedSidekiq.new(@variant, url: @spec["server_url"], recorder: @recorder, log: @spec["log"])
      configure(sidekiq.config)
      measured = measure(sidekiq.prepare)
      sidekiq.stop
      result(measured)
    end

    private

    def push
      pusher = KeyedPusher.new(@spec["redis_url"])
      pusher.hot_key(@spec["hot_jobs"], @variant.keyed)
    ensure
      pusher&.close
    end

    # Outermost, the guard: a job it drops or reschedules never reaches the
    # Recorder, nor the TenantTracker, innermost.
    def configure(config)
      config.server_middleware.add(TenantTracker::Middleware, @tracker)
      guard = GUARDS[@variant.guard]
      return unless guard

      config.server_middleware.prepend(guard)
      guard.configure(config) if guard.respond_to?(:configure)
    end

    def measure(sidekiq)
      window = Window.new(@probe).open
      @tracker.origin = LimitFetchBench.monotonic
      sampler = ParkedSampler.new(@spec["redis_url"], parked_key).start
      sidekiq.start
      wait_until_done
      measured = window.close
      sampler.stop
      measured.merge("max_parked" => sampler.max, "sampler_calls" => sampler.calls)
    end

    def wait_until_done
      return if @recorder.done_within?(@spec["timeout"])

      raise Failure, "#{@recorder.done} of #{@jobs} jobs done after #{@spec["timeout"]} s"
    end

    def parked_key
      id = Sidekiq::LimitFetch::JobLimits.declared(TenantJob).key_id(KeyedVariants::HOT_TENANT)
      GemKeys.parked(id)
    end

    def result(measured)
      commands = measured["commands"]
      commands = commands.merge("llen" => commands.fetch("llen", 0) - measured["sampler_calls"])
      measured.merge(tenants, per_executed(measured, commands), "commands" => commands, "jobs" => @jobs,
        "executed" => @tracker.executed, "dropped" => @recorder.dropped, "rescheduled" => @recorder.rescheduled)
    end

    def tenants
      hot = KeyedVariants::HOT_TENANT
      {"hot_max_running" => @tracker.max_running(hot), "hot_limit" => hot_limit,
       "cold_max_running" => @tracker.max_running_except(hot),
       "cold_first_start_s" => @tracker.first_starts_except(hot)}
    end

    def per_executed(measured, commands)
      executed = @tracker.executed
      {"jobs_per_s" => @jobs / measured["seconds"], "commands_per_executed_job" => commands.values.sum.fdiv(executed),
       "round_trips_per_executed_job" => measured["round_trips"].values.sum.fdiv(executed),
       "redis_cpu_us_per_executed_job" => measured["redis_cpu_s"] * 1e6 / executed,
       "process_cpu_us_per_executed_job" => measured["process_cpu_s"] * 1e6 / executed}
    end

    # The hot tenant's limit, where the variant has one.
    def hot_limit
      return TenantJob::LIMIT if @variant.keyed
      return @variant.limit if @variant.limit
      return SeedReschedule::LIMIT if @variant.guard == :reschedule

      1 if @variant.guard == :lock
    end
  end
end
