# frozen_string_literal: true

require_relative "../../../tools/lib/limit_fetch_tools/downstream"
require "limit_fetch_bench/back_off_jobs"
require "limit_fetch_bench/cli_app"
require "limit_fetch_bench/cli_fleet"
require "limit_fetch_bench/back_off_tally"

module LimitFetchBench
  # One run of the back_off section (BackOffVariants): the simulated
  # downstream started (a process of its own, as the first phase's
  # capacity), the app (CliApp, made by the section's first run, in the
  # bench's directory) and its `sidekiq` processes (CliFleet) started
  # and registered, then one tenant's jobs
  # pushed at once through the gem's client middleware; the capacity
  # changed at each phase's end; timed from the push until every job's call
  # succeeded, or until the timeout (then reported as not done), and when
  # 50, 90, 99 and 100% of them were (`done_at`, as seen every 50 ms). Reported:
  # the wall time against the ideal (jobs × job time / capacity, of the
  # first phase), the downstream's calls and 429s (and, for each capacity
  # change, the 5 s after it and the 5 s after those), the most jobs in the retry set at once, and
  # BackOffTally. The adaptive variant is skipped where the gem has no
  # BackOff.
  class BackOffRun
    SAMPLE = 0.05
    # Percentages of the jobs done whose time is reported.
    DONE_SHARES = [50, 90, 99, 100].freeze
    AFTER_CHANGE = 5

    def initialize(spec)
      @spec = spec
      @variant = Variant[spec["variant"]]
      @dir = File.dirname(spec["log"])
      @redis = RedisClient.config(url: spec["redis_url"]).new_client
    end

    def run
      return skipped unless available?

      start
      measured = measure
      measured.merge(BackOffTally.new(@redis, @jids).to_h, downstream, settings)
    ensure
      @fleet&.stop
      @downstream&.stop
      @redis.close
    end

    private

    def phases = @spec["phases"]

    def start
      @downstream = LimitFetchTools::Downstream.new(dir: @dir, capacity: phases.first[0],
        retry_after: @spec["retry_after"]).start
      app = CliApp.new(File.join(@dir, "back_off_app"), jobs: File.join(__dir__, "back_off_jobs"),
        middleware: "LimitFetchBench::BackOffJobs::Ledger", queue: BackOffJobs::QUEUE).create
      @fleet = CliFleet.new(app, @spec, env: {"DOWNSTREAM_URL" => @downstream.url}).start(@redis)
    end

    def jobs = @spec["jobs"]

    def available? = @variant.key != "back_off_adaptive" || BackOffJobs.back_off?

    def skipped
      {"skipped" => "the gem has no Sidekiq::LimitFetch::BackOff: the adaptive variant needs it (and concurrency " \
                    "as a Range)", "jobs" => jobs}
    end

    def measure
      @downstream.reset # its time series from the push on
      @jids = push
      @started = LimitFetchBench.monotonic
      @schedule = phase_changes(@started)
      @retry_set_max = 0
      @done_at = DONE_SHARES.to_h { [_1, nil] }
      {"seconds" => wait_until_done(@started), "retry_set_max" => @retry_set_max, "done_at" => @done_at}
    end

    # The jids, pushed as an app pushes them, through the gem's client
    # middleware.
    def push
      config = Sidekiq::Config.new
      config.redis = {url: @spec["redis_url"]}
      config.client_middleware.add(Sidekiq::LimitFetch::ClientMiddleware)
      push_with(Sidekiq::Client.new(config:))
    ensure
      config&.redis_pool&.shutdown(&:close)
    end

    def push_with(client)
      job = Object.const_get(BackOffVariants.job(@variant.key))
      client.push_bulk("class" => job, "args" => Array.new(jobs) { [@spec["tenant"], @spec["job_ms"]] }).to_set
    end

    # [[at (monotonic), capacity], ...]: the changes still to make.
    def phase_changes(started)
      at = started
      phases.each_cons(2).map do |(_, seconds), (capacity, _)|
        at += seconds
        [at, capacity]
      end
    end

    # The seconds until every job was done; nil if not within the timeout.
    def wait_until_done(started)
      deadline = started + @spec["timeout"]
      loop do
        now = LimitFetchBench.monotonic
        return now - started if done?(now)
        return nil if now > deadline

        @fleet.check!
        sleep SAMPLE
      end
    end

    # True once every job is done; first makes the phase changes due and
    # samples the retry set.
    def done?(now)
      @downstream.capacity = @schedule.shift[1] while @schedule.any? && @schedule.first[0] <= now
      @retry_set_max = [@retry_set_max, @redis.call("ZCARD", "retry")].max
      done_count(now) >= jobs
    end

    # The jobs done so far, noted in `done_at`.
    def done_count(now)
      done = @redis.call("HLEN", BackOffJobs::DONE)
      @done_at.each_key { |share| @done_at[share] ||= (now - @started).round(2) if done * 100 >= jobs * share }
      done
    end

    def downstream
      stats = @downstream.stats
      {"calls" => stats["calls"], "too_many" => stats["too_many"], "too_many_share" => stats.too_many_share,
       "max_in_flight" => stats.tenant(@spec["tenant"])["max_in_flight"],
       "after_changes" => stats.after_changes(seconds: AFTER_CHANGE, tenant: @spec["tenant"]),
       "settled_after_changes" => stats.after_changes(seconds: AFTER_CHANGE, settle: AFTER_CHANGE,
         tenant: @spec["tenant"])}
    end

    def settings
      {"jobs" => jobs, "ideal_seconds" => jobs * @spec["job_ms"] / 1000.0 / phases.first[0],
       **@spec.slice("job_ms", "retry_after", "phases", "processes", "threads", "timeout")}
    end
  end
end
