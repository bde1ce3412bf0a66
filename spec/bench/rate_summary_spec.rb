# frozen_string_literal: true

$LOAD_PATH.unshift(File.expand_path("../../bench/lib", __dir__))
require "limit_fetch_bench"
require "limit_fetch_bench/pace_log"

# bin/bench's rate section from made-up runs (no bench is run): starts
# counted against a rate's window, pickup latencies from what the paced
# jobs noted, the summary's ratios (a rate that never binds over no limit),
# the windows' openings against their target, the limit check of rates,
# and the Markdown tables.
RSpec.describe LimitFetchBench::Summary, "the rate section" do
  let(:options) { LimitFetchBench::Options.parse(%w[--quick --only rate]) }
  let(:setup) { {"redis" => "Redis 8.0.0", "proxy" => nil, "baseline" => nil} }
  let(:summary) { LimitFetchBench::Summary.new(runs, options: options, setup: setup, seconds: 1.0).to_h }
  let(:markdown) { LimitFetchBench::Markdown.new(summary).render }

  # Throughput runs of the rate section: [jobs/s, commands, process CPU µs, Redis CPU µs] per job.
  def throughput(variant, *figures, counted: nil)
    figures.each_with_index.map do |(jobs_per_s, commands, process, redis), index|
      {"section" => "rate", "variant" => variant, "round" => index + 1, "jobs" => 1000, "jobs_per_s" => jobs_per_s,
       "limit" => nil, "utilisation" => nil, "round_trips" => {"ruby" => 0, "rust" => 1000},
       "max_in_flight" => {"default" => 1}, "max_running" => {"default" => 1}, "round_trips_per_job" => 1.0,
       "commands_per_job" => commands, "process_cpu_us_per_job" => process, "redis_cpu_us_per_job" => redis,
       "rate" => counted && [10_000_000, 60], "starts_counted" => counted, "rate_parked" => 0}
    end
  end

  def hot(variant, most_counted:, most_perform:, rescheduled: 0)
    {"section" => "rate", "variant" => variant, "round" => 1, "jobs" => 1150, "hot_jobs" => 150,
     "rate" => [50, 1], "seconds" => 3.1, "push_seconds" => 0.05, "cold_first_start_s" => [0.01, 0.02, 0.3],
     "hot_last_start_s" => 2.1, "hot_ideal_s" => 2.0, "hot_most_in_window_perform" => most_perform,
     "hot_most_in_window_counted" => most_counted, "hot_starts_counted" => most_counted && 150,
     "executed" => 1150, "rescheduled" => rescheduled, "commands_per_executed_job" => 9.0,
     "round_trips_per_executed_job" => 1.1, "redis_cpu_us_per_executed_job" => 40.0,
     "process_cpu_us_per_executed_job" => 70.0}
  end

  # An idle run: windows opening, their pickup latencies (nil: not worked out).
  def idle(round, latencies, most: 1)
    {"section" => "rate", "variant" => "rate_idle", "round" => round, "concurrency" => 10,
     "pace" => {"openings" => 17, "period" => 0.2, "latencies_ms" => latencies, "most_in_window" => most,
                "commands_per_opening" => 12.0 + round, "scripts_per_opening" => 2.0}}
  end

  # The cells of the table row of `label`.
  def row(label)
    line = markdown.lines.find { _1.start_with?("| #{label} |") }
    line.strip.delete_prefix("| ").delete_suffix(" |").split(" | ")
  end

  describe LimitFetchBench::RateWindow do
    it "counts starts less than a period apart as one window's, as the gem does" do
      expect(described_class.most([0.0, 0.5, 0.99, 1.0, 1.5], 1.0)).to eq(3)
      expect(described_class.most([2.0, 0.0, 1.0], 1.0)).to eq(1)
      expect(described_class.most([], 1.0)).to eq(0)
    end

    it "gives the least time a backlog takes under a rate: whole periods after the first window" do
      expect(described_class.ideal(150, 50, 1)).to eq(2)
      expect(described_class.ideal(151, 50, 1)).to eq(3)
      expect(described_class.ideal(10, 50, 1)).to eq(0)
    end
  end

  describe LimitFetchBench::PaceLog do
    it "times each start from the opening of its window: the start before it, as counted, plus the period" do
      entries = [{"started" => 10.003, "counted" => 10.001}, {"started" => 10.204, "counted" => 10.202},
                 {"started" => 10.4015, "counted" => 10.4011}]
      latencies = described_class.latencies(entries.reverse, 0.2)
      expect(latencies.map { (_1 * 1e3).round(1) }).to eq([3.0, -0.5])
      expect(described_class.fetch_latencies(entries, 0.2).map { (_1 * 1e3).round(1) }).to eq([1.0, -0.9])
    end

    it "works none out when a job found no start counted" do
      expect(described_class.latencies([{"started" => 1.0, "counted" => nil}], 0.2)).to be_nil
    end
  end

  context "with every workload" do
    let(:runs) do
      throughput("rate_basic", [1000, 1.0, 50, 10]) + throughput("rate_none", [2000, 5.0, 40, 12]) +
        throughput("rate_class", [1800, 9.0, 44, 18], counted: 1000) +
        [hot("rate_hot_gem", most_counted: 50, most_perform: 51),
         hot("rate_hot_reschedule", most_counted: nil, most_perform: 98, rescheduled: 300),
         idle(1, [0.5, 1.0, 2.0]), idle(2, [0.7, 6.0]), idle(3, nil)]
    end

    it "gives a rate's throughput and costs per job over no limit's, beside BasicFetch's" do
      rated = summary["rate"]["throughput"]["rate_class"]
      expect(rated["vs_none"]["jobs_per_s"]).to be_within(1e-9).of(0.9)
      expect(rated["vs_none"]["commands"]).to be_within(1e-9).of(1.8)
      expect(rated["vs_none"]["redis_cpu"]).to be_within(1e-9).of(1.5)
      expect(rated["redis_cpu_ratio"]).to be_within(1e-9).of(1.8)
      expect(summary["rate"]["throughput"]["rate_none"]["vs_none"]).to be_nil
      expect(row("LimitFetch, class rate 10,000,000/60 s (not binding)")[2..5])
        .to eq(["×0.90 / ×1.80", "9.00 ×1.80", "44 (×1.10 / ×0.88)", "18.0 (×1.50 / ×1.80)"])
    end

    it "gives the pickup latency over every opening against its target, and what an opening costs" do
      idle = summary["rate"]["idle"]
      expect(idle).to include("runs" => 3, "openings" => 5, "runs_without_latencies" => 1, "most_in_window" => 1,
        "commands_per_opening" => 14.0, "scripts_per_opening" => 2.0, "p99_within_target" => false)
      expect(idle["latency_ms"]).to include("p50" => 1.0, "p99" => 6.0)
      expect(markdown).to include("## Rates: a window's opening, fetchers idle", "≤ 5 ms: **missed**")
      expect(row("5")[5..6]).to eq(%w[14.0 2.0])
    end

    it "checks the gem's rates as it counted them, not the limiter's" do
      checks = summary["limit_checks"]
      expect(checks.map { _1["variant"] }).to eq(%w[rate_hot_gem rate_idle rate_idle rate_idle])
      expect(checks).to all(include("ok" => true))
      expect(row("LimitFetch, key rate 50/1 s (parking)")[5]).to eq("50 / 51 / 50")
      expect(row("BasicFetch + a counter per tenant and 1 s window, reschedule 1 s later over 50")[5])
        .to eq("– / 98 / 50")
    end
  end

  context "when a rate let too many start" do
    let(:runs) { [hot("rate_hot_gem", most_counted: 52, most_perform: 52), idle(1, [1.0], most: 2)] }

    it "fails the limit check" do
      expect(summary["limit_checks"].map { _1["ok"] }).to eq([false, false])
      expect(markdown).to include("2 of 2 limited runs exceeded their limit")
    end
  end
end
