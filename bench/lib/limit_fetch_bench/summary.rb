# frozen_string_literal: true

module LimitFetchBench
  # Everything one invocation measured, aggregated per variant: medians,
  # min-max over the runs and ratios to BasicFetch from the same invocation;
  # the limit check of every run; and the raw runs.
  class Summary
    ROUND_TRIPS = "Client round trips, counted where the clients make them. Sidekiq's redis-client (BasicFetch, " \
                  "Sidekiq's heartbeat and scheduler): a middleware counts every call (BRPOP included) and " \
                  "every pipeline or MULTI block as one. The gem's Rust core counts every request it sends, " \
                  "per capsule (a script, a pipeline, an EVAL after NOSCRIPT, the doorbell's EXISTS and " \
                  "connection set-up: one each). Commands inside a script or a MULTI block are not round trips. " \
                  "Redis commands per job: every call in INFO commandstats over the window, including the " \
                  "commands scripts and MULTI blocks run, divided by the jobs."

    def initialize(runs, options:, proxy:, redis_version:, seconds:)
      @runs = runs
      @options = options
      @proxy = proxy
      @redis_version = redis_version
      @seconds = seconds
    end

    def to_h
      {"meta" => meta, "throughput" => throughput("throughput"), "delayed" => throughput("delayed"),
       "idle" => idle, "fetch_cost" => FetchCostSummary.new(fetch_run).to_h,
       "limit_checks" => LimitCheck.all(@runs), "runs" => @runs}
    end

    private

    def meta
      {"date" => Time.now.utc.iso8601, "seconds" => @seconds.round(1), "cpus" => Etc.nprocessors,
       "ruby" => RUBY_DESCRIPTION, "sidekiq" => Sidekiq::VERSION, "redis" => @redis_version,
       "gem" => Sidekiq::LimitFetch::VERSION, "poll_range" => poll_range, "options" => options,
       "proxy" => @proxy&.to_h, "round_trip_counting" => ROUND_TRIPS}
    end

    def options = @options.to_h.except(:output).transform_keys(&:to_s)

    def poll_range = @runs.filter_map { _1["poll_range"] }.first

    def fetch_run = @runs.find { _1["section"] == "fetch" }

    def of(section) = @runs.select { _1["section"] == section }.group_by { _1["variant"] }

    def throughput(section)
      groups = of(section)
      groups.to_h do |key, runs|
        base = groups[Variant[key].baseline]
        [key, ThroughputSummary.new(Variant[key], runs, base).to_h]
      end
    end

    def idle
      groups = of("idle")
      groups.to_h { |key, runs| [key, IdleSummary.new(Variant[key], runs, groups["basic"]).to_h] }
    end
  end
end
