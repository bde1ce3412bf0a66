# frozen_string_literal: true

module LimitFetchBench
  # The fetch cost per scenario and variant: time per retrieve_work call
  # (median of the runs' medians, min-max; robust to the machine's noise),
  # ratio to BasicFetch, and the medians of the runs' mean and p99 time, Redis
  # commands and Redis time per call.
  class FetchCostSummary
    MEDIANS = %w[mean_us p99_us commands_per_call redis_us_per_call].freeze

    def initialize(run)
      @run = run
    end

    def to_h
      return {} unless @run

      by_scenario = @run["runs"].group_by { _1["scenario"] }
      by_scenario.to_h do |scenario, runs|
        variants = runs.group_by { _1["variant"] }
        base = Stats.median(variants.fetch("basic").map { _1["p50_us"] })
        [scenario, {"label" => @run["scenarios"][scenario],
                    "variants" => variants.to_h { |key, list| [key, variant(key, list, base)] }}]
      end
    end

    private

    def variant(key, runs, base)
      medians = runs.map { _1["p50_us"] }
      {"label" => @run["variants"][key], "runs" => runs.size, "calls" => runs.sum { _1["calls"] },
       "p50_us" => Stats.spread(medians), "ratio" => Stats.ratio(Stats.median(medians), base)}
        .merge(MEDIANS.to_h { |name| [name, Stats.median(runs.map { _1[name] })] })
    end
  end
end
