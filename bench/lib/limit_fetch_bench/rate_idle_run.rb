# frozen_string_literal: true

module LimitFetchBench
  # One idle run of the rate section, an embedded LimitFetch Sidekiq of 10
  # threads in a process of its own: once its fetchers are asleep (SETTLE
  # seconds from its start), `openings` + 1 PacedJobs (1 start per 0.2 s)
  # are pushed at once: the first runs, the others are parked and go one by
  # one, each as its window opens; pickup latency from the opening to the
  # start (PaceLog), and what the openings cost, from the first job's start,
  # once the others are parked (the push and the parking are no opening), to
  # the last start.
  class RateIdleRun
    SETTLE = RateVariants::IDLE_SETTLE
    PERIOD = RateVariants::PACED_RATE[1]
    SCRIPTS = %w[fcall fcall_ro evalsha evalsha_ro eval eval_ro].freeze

    def initialize(spec)
      @spec = spec
      @variant = Variant[spec["variant"]]
      @openings = spec["openings"]
      @recorder = Recorder.current = Recorder.new
      @probe = RedisProbe.new(spec["redis_url"])
    end

    def run
      sidekiq = EmbeddedSidekiq.new(@variant, url: @spec["server_url"], recorder: @recorder, log: @spec["log"])
      sidekiq.prepare.start
      sleep SETTLE
      result = {"pace" => pace, "concurrency" => @variant.concurrency}
      sidekiq.stop
      result
    end

    private

    def pace
      log = PacedJob.log = pace_log
      push(PacedJob, @openings + 1)
      before = wait_for_parking(log)
      window = Window.new(@probe).open
      wait_for_pace(log)
      paced(window.close, log.entries, before)
    ensure
      log&.close
    end

    # Until the first PacedJob started and the others are parked; returns
    # how many started by then (on a loaded machine a window may open before
    # the parking is done: it is then left out).
    def wait_for_parking(log)
      wait_for("the first PacedJob started and the others parked", poll: 0.005) do
        started = log.entries.size
        started.positive? && paced_parked + started - 1 == @openings
      end
      log.entries.size
    end

    def paced_parked = @probe.call("LLEN", GemKeys.parked(RateJobs.class_id(PacedJob)))

    def wait_for_pace(log)
      jobs = @openings + 1
      return if log.started_within?(jobs, 10 + (jobs * PERIOD * 2))

      raise Failure, "#{log.entries.size} of #{jobs} PacedJobs started"
    end

    def pace_log = PaceLog.new(@spec["redis_url"], GemKeys.job_starts(RateJobs.class_id(PacedJob)), PERIOD)

    def paced(measured, entries, before)
      counted = entries.filter_map { _1["counted"] }
      {"openings" => @openings, "seconds" => measured["seconds"], "period" => PERIOD,
       "latencies_ms" => PaceLog.latencies(entries, PERIOD)&.map { _1 * 1e3 },
       "fetch_latencies_ms" => PaceLog.fetch_latencies(entries, PERIOD)&.map { _1 * 1e3 },
       "most_in_window" => RateWindow.most(counted, PERIOD), "counted" => counted.size}
        .merge(per_opening(measured["commands"], entries.size - before))
    end

    # The commands of the `openings` measured, less the PaceLog's own ZRANGE
    # calls (one a start), in all and per opening.
    def per_opening(commands, openings)
      commands = commands.merge("zrange" => commands.fetch("zrange", 0) - openings)
      {"commands" => commands, "openings_measured" => openings,
       "commands_per_opening" => commands.values.sum.fdiv(openings),
       "scripts_per_opening" => commands.values_at(*SCRIPTS).compact.sum.fdiv(openings)}
    end

    def push(job_class, count)
      pusher = RatePusher.new(@spec["redis_url"])
      pusher.same(job_class, count)
    ensure
      pusher&.close
    end

    def wait_for(what, timeout: 10, poll: 0.05)
      deadline = LimitFetchBench.monotonic + timeout
      until yield
        raise Failure, "not #{what} after #{timeout} s" if LimitFetchBench.monotonic > deadline

        sleep poll
      end
    end
  end
end
