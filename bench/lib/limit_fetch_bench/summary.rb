# frozen_string_literal: true

module LimitFetchBench
  # Everything one invocation measured, aggregated per variant: medians,
  # min-max over the runs and ratios to BasicFetch from the same invocation
  # (and, with a baseline revision, of each LimitFetch variant to its twin);
  # the keyed section (KeyedSummary); the rate section (RateSummary); the
  # limit check of every run; and the raw runs.
  class Summary
    ROUND_TRIPS = "Client round trips, counted where the clients make them. Sidekiq's redis-client (BasicFetch, " \
                  "Sidekiq's heartbeat and scheduler): a middleware counts every call (BRPOP included) and " \
                  "every pipeline or MULTI block as one. The gem's Rust core counts every request it sends, " \
                  "per capsule (a script, a pipeline, an EVAL after NOSCRIPT, the doorbell's EXISTS and " \
                  "connection set-up: one each). Commands inside a script or a MULTI block are not round trips. " \
                  "Redis commands per job: every call in INFO commandstats over the window, including the " \
                  "commands scripts and MULTI blocks run, divided by the jobs."

    # `setup`: what the runner started, for the meta: "redis" (its version),
    # "proxy" (DelayProxy#to_h) and "baseline" (Baseline#to_h), or nil.
    def initialize(runs, options:, setup:, seconds:)
      @runs = runs
      @options = options
      @setup = setup
      @seconds = seconds
    end

    def to_h
      {"meta" => meta, "throughput" => throughput("throughput"), "delayed" => throughput("delayed"),
       "idle" => idle, "fetch_cost" => FetchCostSummary.new(fetch_runs, rev).to_h,
       "keyed" => KeyedSummary.new(@runs, rev).to_h, "rate" => RateSummary.new(@runs).to_h,
       "limit_checks" => LimitCheck.all(@runs), "runs" => @runs}.merge(BackOffSummary.new(@runs).to_h)
    end

    private

    def meta
      {"date" => Time.now.utc.iso8601, "seconds" => @seconds.round(1), "cpus" => Etc.nprocessors,
       "ruby" => RUBY_DESCRIPTION, "sidekiq" => Sidekiq::VERSION, "redis" => @setup["redis"],
       "gem" => Sidekiq::LimitFetch::VERSION, "poll_range" => poll_range, "options" => options,
       "proxy" => @setup["proxy"], "baseline" => @setup["baseline"], "round_trip_counting" => ROUND_TRIPS}
    end

    def options = @options.to_h.except(:output).transform_keys(&:to_s)

    def poll_range = @runs.filter_map { _1["poll_range"] }.first

    def fetch_runs = @runs.select { _1["section"] == "fetch" }

    def rev = @setup["baseline"]&.fetch("rev")

    # The runs of the variant's twin (none for a twin, or for BasicFetch,
    # which has none).
    def twin_runs(groups, variant) = rev && groups[variant.twin(rev).key]

    # The keyed and rate sections' runs are their own (KeyedSummary, RateSummary).
    def of(section) = @runs.select { _1["section"] == section }.group_by { _1["variant"] }

    def throughput(section)
      groups = of(section)
      groups.to_h do |key, runs|
        variant = Variant[key]
        [key, ThroughputSummary.new(variant, runs, groups[variant.baseline], twin_runs(groups, variant)).to_h]
      end
    end

    def idle
      groups = of("idle")
      groups.to_h do |key, runs|
        [key, IdleSummary.new(Variant[key], runs, groups["basic"], twin_runs(groups, Variant[key])).to_h]
      end
    end
  end
end
