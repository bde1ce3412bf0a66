# frozen_string_literal: true

$LOAD_PATH.unshift(File.expand_path("../../bench/lib", __dir__))
require "limit_fetch_bench"

# bin/bench's summary and Markdown, from made-up runs (no bench is run): the
# CPU per job of every throughput variant beside its ratio to BasicFetch's
# medians from the same runs, the Redis ceiling (10⁶ / Redis CPU µs per
# job), the keyed variants' CPU against the same jobs with no key, and with
# a baseline the ratios of each variant to its twin.
RSpec.describe LimitFetchBench::Summary do
  let(:rev) { "abc1234" }
  let(:options) { LimitFetchBench::Options.parse(%w[--quick --only throughput,keyed --baseline HEAD]) }
  let(:setup) do
    {"redis" => "Redis 8.0.0", "proxy" => nil,
     "baseline" => {"ref" => "HEAD", "rev" => rev, "subject" => "a change", "job_limits" => true}}
  end
  let(:summary) { described_class.new(runs, options: options, setup: setup, seconds: 1.0).to_h }
  let(:markdown) { LimitFetchBench::Markdown.new(summary).render }

  # Runs of the throughput section, one per [jobs/s, process CPU µs/job, Redis CPU µs/job].
  def throughput(variant, *figures, section: "throughput")
    figures.each_with_index.map do |(jobs_per_s, process, redis), index|
      {"section" => section, "variant" => variant, "round" => index + 1, "jobs" => 1000, "jobs_per_s" => jobs_per_s,
       "limit" => nil, "utilisation" => nil, "round_trips" => {"ruby" => 0, "rust" => 1000},
       "max_in_flight" => {"default" => 1}, "max_running" => {"default" => 1}, "round_trips_per_job" => 1.0,
       "commands_per_job" => 6.0, "process_cpu_us_per_job" => process, "redis_cpu_us_per_job" => redis}
    end
  end

  # A hot-key run: all done in `seconds`, process and Redis CPU µs per executed job.
  def hot(variant, seconds, process, redis)
    {"section" => "keyed", "variant" => variant, "round" => 1, "jobs" => 11_000, "seconds" => seconds,
     "hot_limit" => 2, "hot_max_running" => 2, "cold_max_running" => 1, "max_parked" => 0,
     "cold_first_start_s" => [0.1, 0.2], "executed" => 11_000, "dropped" => 0, "rescheduled" => 0,
     "commands_per_executed_job" => 12.0, "round_trips_per_executed_job" => 1.0,
     "process_cpu_us_per_executed_job" => process, "redis_cpu_us_per_executed_job" => redis}
  end

  # The cells of the table row of `label`.
  def row(label)
    line = markdown.lines.find { _1.start_with?("| #{label} |") }
    line.strip.delete_prefix("| ").delete_suffix(" |").split(" | ")
  end

  describe "the throughput section" do
    let(:runs) do
      throughput("basic", [1000, 100, 30], [900, 110, 20], [1100, 90, 40]) +
        throughput("gem", [1100, 130, 60], [1200, 120, 90], [1000, 150, 45]) +
        throughput("gem@#{rev}", [1000, 104, 50])
    end

    it "gives each variant's process and Redis CPU per job as medians with their ratios to BasicFetch's" do
      gem = summary["throughput"]["gem"]
      expect(gem).to include("process_cpu_us_per_job" => 130, "redis_cpu_us_per_job" => 60)
      expect(gem["process_cpu_ratio"]).to be_within(1e-9).of(1.30)
      expect(gem["redis_cpu_ratio"]).to be_within(1e-9).of(2.0)
      expect(summary["throughput"]["basic"]).to include("process_cpu_ratio" => nil, "redis_cpu_ratio" => nil)
      expect(summary["throughput"]["gem@#{rev}"]["redis_cpu_ratio"]).to be_within(1e-9).of(50.0 / 30)
    end

    it "gives the Redis ceiling, 10⁶ / Redis CPU µs per job, and its ratio to BasicFetch's" do
      expect(summary["throughput"]["basic"]["redis_ceiling_jobs_per_s"]).to be_within(1e-6).of(1e6 / 30)
      expect(summary["throughput"]["gem"]["redis_ceiling_jobs_per_s"]).to be_within(1e-6).of(1e6 / 60)
      expect(summary["throughput"]["gem"]["redis_ceiling_ratio"]).to be_within(1e-9).of(0.5)
    end

    it "gives each variant's ratios to its twin: of throughputs and of process and Redis CPU per job" do
      gem = summary["throughput"]["gem"]
      expect(gem["rev_ratio"]).to be_within(1e-9).of(1.1)
      expect(gem["process_cpu_rev_ratio"]).to be_within(1e-9).of(130.0 / 104)
      expect(gem["redis_cpu_rev_ratio"]).to be_within(1e-9).of(1.2)
    end

    it "writes the figures with their ratios in the same cells, and says what process CPU counts" do
      expect(markdown).to include("| variant | jobs/s | × | × @#{rev} | round trips/job (Ruby + Rust) | " \
                                  "Redis cmds/job | process CPU µs/job | Redis CPU µs/job | Redis ceiling jobs/s |")
      expect(row("BasicFetch")[3..8]).to eq(["–", "1.00 (0.00 + 1.00)", "6.00", "100", "30.0", "33333"])
      expect(row("LimitFetch, no limit")[2..8]).to eq(
        ["×1.10", "×1.10 (process CPU ×1.25, Redis CPU ×1.20)", "1.00 (0.00 + 1.00)", "6.00", "130 ×1.30",
         "60.0 ×2.00", "16667 ×0.50"]
      )
      expect(row("LimitFetch, no limit @#{rev}")[6..8]).to eq(["104 ×1.04", "50.0 ×1.67", "20000 ×0.60"])
      expect(markdown).to include("every thread's (Ruby's and the Rust core's)", "Redis ceiling = 10⁶ / Redis CPU µs")
    end

    it "names the machine's CPU model beside its CPUs" do
      expect(markdown).to include("#{Etc.nprocessors} CPUs (#{LimitFetchTools.cpu_model});")
    end
  end

  describe "the keyed section" do
    let(:runs) do
      throughput("keyed_none", [1000, 80, 50], section: "keyed") +
        throughput("keyed_distinct", [1100, 88, 63], section: "keyed") +
        [hot("hot_gem", 11.0, 120, 67), hot("hot_none", 10.0, 100, 50), hot("hot_queue2", 10.5, 105, 54),
         hot("hot_gem@#{rev}", 12.0, 150, 60)]
    end

    it "gives the distinct keys' CPU per job against the jobs with no key" do
      expect(row("LimitFetch, a distinct key per job (limit 1)")[2..8]).to eq(
        ["×1.10", "–", "1.00 (0.00 + 1.00)", "6.00", "88 ×1.10", "63.0 ×1.26", "15873 ×0.79"]
      )
    end

    it "gives the hot key's CPU per executed job against the same jobs with no key, and against its twin" do
      hot = summary["keyed"]["hot"]["hot_gem"]
      expect(hot["redis_cpu_vs_none"]).to be_within(1e-9).of(1.34)
      expect(hot["process_cpu_vs_none"]).to be_within(1e-9).of(1.2)
      expect(hot["redis_cpu_rev_ratio"]).to be_within(1e-9).of(67.0 / 60)
      cells = row("LimitFetch, key limit 2 (parking)")
      expect(cells.last(2)).to eq(["120 ×1.20", "67 ×1.34"])
      expect(cells[3]).to include("process CPU ×0.80, Redis CPU ×1.12")
      expect(row("LimitFetch, no key (no limit)").last(2)).to eq(["100 ×1.00", "50 ×1.00"])
    end
  end
end
