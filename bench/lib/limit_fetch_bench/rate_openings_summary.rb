# frozen_string_literal: true

module LimitFetchBench
  # The rate section's windows opening on an idle process: the pickup
  # latency (over all runs' openings; "runs_without_latencies": runs that
  # could not work them out) against its target, the most starts of the
  # paced class within a window (Redis's clock), and what an opening costs.
  class RateOpeningsSummary
    include SummaryFigures

    TARGET_P99_MS = 5.0
    PERCENTILES = %w[min p50 p95 p99 max].freeze

    def initialize(runs)
      @runs = runs
      @paces = runs.filter_map { _1["pace"] }
    end

    def to_h
      return nil if @paces.empty?

      {"runs" => @runs.size, "concurrency" => @runs.first["concurrency"], "period" => @paces.first["period"],
       **most(@paces, %w[most_in_window]), **medians(@paces, %w[commands_per_opening scripts_per_opening]), **latency}
    end

    private

    def latency
      known = @paces.filter_map { _1["latencies_ms"] }
      all = known.flatten
      p99 = Stats.percentile(all, 99)
      {"openings" => all.size, "runs_without_latencies" => @paces.size - known.size,
       "latency_ms" => Stats.percentiles(all, *PERCENTILES),
       "run_p99_ms" => Stats.spread(known.map { Stats.percentile(_1, 99) }),
       "fetch_latency_ms" => Stats.percentiles(@paces.flat_map { _1["fetch_latencies_ms"] || [] }, *PERCENTILES),
       "target_p99_ms" => TARGET_P99_MS, "p99_within_target" => p99 && p99 <= TARGET_P99_MS}
    end
  end
end
