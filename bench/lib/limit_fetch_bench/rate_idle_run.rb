# frozen_string_literal: true

module LimitFetchBench
  # One idle run of the rate section, an embedded LimitFetch Sidekiq of 10
  # threads whose only work is jobs parked behind a rate:
  # 1. it starts on an empty queue and settles; what it costs idle for
  #    `idle_seconds`: the blocking wait, the reference;
  # 2. PARKED_JOBS ParkedJobs are pushed: the first runs, the others are
  #    parked behind their class's rate, whose window opens an hour later;
  #    once they are and it settled, what it costs for `idle_seconds` again
  #    (Redis commands per second, Redis and process CPU);
  # 3. `openings` + 1 PacedJobs (1 start per 0.2 s) are pushed at once: the
  #    first runs, the others are parked and go one by one, each as its
  #    window opens; pickup latency from the opening to the start (PaceLog),
  #    and what the phase cost per opening.
  class RateIdleRun
    SETTLE = 1.0
    PERIOD = RateVariants::PACED_RATE[1]
    SCRIPTS = %w[fcall fcall_ro evalsha evalsha_ro eval eval_ro].freeze

    def initialize(spec)
      @spec = spec
      @variant = Variant[spec["variant"]]
      @seconds = spec["idle_seconds"]
      @openings = spec["openings"]
      @recorder = Recorder.current = Recorder.new
      @probe = RedisProbe.new(spec["redis_url"])
    end

    def run
      sidekiq = EmbeddedSidekiq.new(@variant, url: @spec["server_url"], recorder: @recorder, log: @spec["log"])
      sidekiq.prepare.start
      sleep SETTLE
      blocking = idle_cost
      parked = park { idle_cost }
      paced = pace
      sidekiq.stop
      {"blocking" => blocking, "parked" => parked, "pace" => paced, "concurrency" => @variant.concurrency}
    end

    private

    def idle_cost
      window = Window.new(@probe).open
      sleep @seconds
      measured = window.close
      rates = {"commands_per_s" => measured["commands"].values.sum,
               "process_cpu_percent" => measured["process_cpu_s"] * 100,
               "redis_cpu_percent" => measured["redis_cpu_s"] * 100}
      measured.merge(rates.transform_values { _1 / measured["seconds"] })
    end

    # Parks PARKED_JOBS - 1 ParkedJobs, then yields; the cost measured, with
    # the jobs parked before and after.
    def park
      push(ParkedJob, RateVariants::PARKED_JOBS)
      key = GemKeys.parked(RateJobs.class_id(ParkedJob))
      expected = RateVariants::PARKED_JOBS - 1
      wait_for("1 ParkedJob done and #{expected} parked") do
        @recorder.done == 1 && @probe.call("LLEN", key) == expected
      end
      sleep SETTLE / 2
      measured = yield
      measured.merge("parked_before" => expected, "parked_after" => @probe.call("LLEN", key),
        "done_after" => @recorder.done)
    end

    def pace
      log = PacedJob.log = pace_log
      window = Window.new(@probe).open
      push(PacedJob, @openings + 1)
      wait_for_pace(log)
      paced(window.close, log.entries)
    ensure
      log&.close
    end

    def wait_for_pace(log)
      jobs = @openings + 1
      return if log.started_within?(jobs, 10 + (jobs * PERIOD * 2))

      raise Failure, "#{log.entries.size} of #{jobs} PacedJobs started"
    end

    def pace_log = PaceLog.new(@spec["redis_url"], GemKeys.job_starts(RateJobs.class_id(PacedJob)), PERIOD)

    def paced(measured, entries)
      counted = entries.filter_map { _1["counted"] }
      {"openings" => @openings, "seconds" => measured["seconds"], "period" => PERIOD,
       "latencies_ms" => PaceLog.latencies(entries, PERIOD)&.map { _1 * 1e3 },
       "fetch_latencies_ms" => PaceLog.fetch_latencies(entries, PERIOD)&.map { _1 * 1e3 },
       "most_in_window" => RateWindow.most(counted, PERIOD), "counted" => counted.size}
        .merge(per_opening(measured["commands"], entries.size))
    end

    # The commands, less the PaceLog's own ZRANGE calls (`own`), in all and
    # per opening.
    def per_opening(commands, own)
      commands = commands.merge("zrange" => commands.fetch("zrange", 0) - own)
      {"commands" => commands, "commands_per_opening" => commands.values.sum.fdiv(@openings),
       "scripts_per_opening" => commands.values_at(*SCRIPTS).compact.sum.fdiv(@openings)}
    end

    def push(job_class, count)
      pusher = RatePusher.new(@spec["redis_url"])
      pusher.same(job_class, count)
    ensure
      pusher&.close
    end

    def wait_for(what, timeout: 10)
      deadline = LimitFetchBench.monotonic + timeout
      until yield
        raise Failure, "not #{what} after #{timeout} s" if LimitFetchBench.monotonic > deadline

        sleep 0.05
      end
    end
  end
end
