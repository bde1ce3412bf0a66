# frozen_string_literal: true

module LimitFetchBench
  # One idle variant over its runs: pickup latency percentiles over all its
  # jobs (and the range of the runs' medians), the idle cost per run, and
  # ratios to BasicFetch (and, with --baseline, to its twin).
  class IdleSummary
    COSTS = %w[commands_per_s process_cpu_percent redis_cpu_percent].freeze

    def initialize(variant, runs, basic_runs, twin_runs = nil)
      @variant = variant
      @runs = runs
      @basic = basic_runs
      @twin = twin_runs
    end

    def to_h
      latency = percentiles(@runs.flat_map { _1["latencies_ms"] })
      {"label" => @variant.label, "runs" => @runs.size, "jobs" => @runs.sum { _1["latencies_ms"].size },
       "latency_ms" => latency, "run_p50_ms" => Stats.spread(@runs.map { Stats.median(_1["latencies_ms"]) }),
       "handoff_ms" => handoff}.merge(ratios(latency), costs)
    end

    def costs = COSTS.to_h { |key| [key, Stats.spread(@runs.map { _1["idle"][key] })] }

    private

    def ratios(latency)
      {"p50_ratio" => p50_ratio(latency, @basic), **(@twin ? {"p50_rev_ratio" => p50_ratio(latency, @twin)} : {})}
    end

    def p50_ratio(latency, other)
      other && Stats.ratio(latency["p50"], percentiles(other.flat_map { _1["latencies_ms"] })["p50"])
    end

    # A freed slot taken by a waiting thread, over all the runs.
    def handoff
      values = @runs.flat_map { _1["handoff_ms"] || [] }
      percentiles(values) unless values.empty?
    end

    def percentiles(values) = Stats.percentiles(values, "p50", "p95", "p99")
  end
end
