# frozen_string_literal: true

module LimitFetchBench
  # The fair section over its runs (FairRun): a row per fair_share run, its
  # scenarios' figures with the median Redis CPU per job of the cost
  # variants over their runs (fair / plain key, and their ratio); its
  # progress line, for the terminal. The table: Columns::FAIR.
  class FairSummary
    SCENARIOS = %w[arrivals weighted hot].freeze

    def self.line(run)
      head = format("%-10<s>s r%<r>d %-52<v>s", s: "fair", r: run["round"], v: Variant[run["variant"]].label)
      return format("%<head>s %<us>.1f Redis CPU µs/job", head:, us: run["cost"]["redis_cpu_us_per_job"]) if
        run["cost"]

      "#{head} #{figures(run)}  #{tallied(run)}"
    end

    def self.figures(run)
      shares = %w[arrivals weighted].map { (run.dig(_1, "shares") || {}).values }
      "a #{fmt(run.dig("arrivals", "alone"))}  b #{fmt(*shares[0])}  c #{fmt(*shares[1])}  " \
        "d #{fmt(run.dig("hot", "first_start_max"))} s"
    end

    def self.fmt(*values) = values.map { _1 ? format("%.2f", _1) : "–" }.join("/")

    def self.tallied(run)
      tallies = SCENARIOS.filter_map { run.dig(_1, "tally") }
      once = tallies.all? { _1["done_once"] } ? "yes" : "NO"
      "most running #{tallies.map { _1["max_running"] }.max}  done once: #{once}"
    end

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
