# frozen_string_literal: true

module LimitFetchBench
  # The fair section over its runs (FairRun): a row per fair_share run, its
  # scenarios' figures with the median Redis CPU per job of the cost
  # variants over their runs (fair / plain key, and their ratio). The
  # table: Columns::FAIR; the terminal's line: FairProgress.
  class FairSummary
    SCENARIOS = %w[arrivals weighted hot].freeze

    def initialize(runs)
      @runs = runs.select { _1["section"] == "fair" }
    end

    def to_h = @runs.empty? ? {} : {"fair" => @runs.select { _1["variant"] == "fair_share" }.map { row(_1) }}

    private

    def row(run)
      cost = %w[fair_cost fair_cost_plain].map do |variant|
        Stats.median(@runs.filter_map { _1.dig("cost", "redis_cpu_us_per_job") if _1["variant"] == variant })
      end
      run.merge("cost" => {"fair" => cost[0], "plain" => cost[1], "ratio" => Stats.ratio(*cost)})
    end
  end
end
