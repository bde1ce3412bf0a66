# frozen_string_literal: true

$LOAD_PATH.unshift(File.expand_path("../../bench/lib", __dir__))
require "limit_fetch_bench"

# bin/bench's memory section from made-up runs (no bench is run): its
# option (the counts of jobs at which RSS is read), a row per variant and
# count with the RSS against BasicFetch's, and the Markdown table.
RSpec.describe "bin/bench's memory section" do
  let(:options) { LimitFetchBench::Options.parse(%w[--only memory --memory-jobs 20000,300000]) }
  let(:setup) { {"redis" => "Redis 8.0.0", "proxy" => nil, "baseline" => nil} }
  let(:summary) { LimitFetchBench::Summary.new(runs, options: options, setup: setup, seconds: 1.0).to_h }

  # `rss`: MB at each count.
  def run(variant, round, rss)
    checkpoints = [20_000, 300_000].zip(rss).map do |jobs, mb|
      kb = (mb * 1024).round
      {"jobs" => jobs, "VmRSS" => kb, "VmHWM" => kb + 512, "RssAnon" => kb - 12_288, "RssFile" => 12_288,
       "Pss" => kb - 1024, "Threads" => variant == "memory_gem" ? 16 : 14}
    end
    {"section" => "memory", "variant" => variant, "round" => round, "jobs" => 300_000, "checkpoints" => checkpoints}
  end

  let(:runs) do
    [run("memory_basic", 1, [40.0, 41.0]), run("memory_gem", 1, [46.0, 47.5]),
     run("memory_basic", 2, [41.0, 41.5]), run("memory_gem", 2, [45.0, 46.5]),
     run("memory_basic", 3, [42.0, 42.0]), run("memory_gem", 3, [46.5, 47.0])]
  end

  it "takes ascending counts of jobs, and refuses others by name" do
    expect(options.memory_jobs).to eq([20_000, 300_000])
    expect(LimitFetchBench::Options.parse([]).memory_jobs).to eq([20_000])
    expect(LimitFetchBench::MemoryVariants.spec(options)).to include("checkpoints" => [20_000, 300_000],
      "jobs" => 300_000)
    expect { LimitFetchBench::Options.parse(%w[--memory-jobs 300000,20000]) }
      .to raise_error(OptionParser::InvalidArgument, /--memory-jobs: 300000,20000 is not ascending/)
  end

  it "gives each variant and count its RSS and its difference to BasicFetch's, medians of the runs" do
    rows = summary["memory"]
    expect(rows.map { [_1["label"], _1["jobs"]] }).to eq(
      [["BasicFetch (the gem not loaded)", 20_000], ["BasicFetch (the gem not loaded)", 300_000],
       ["LimitFetch, no limit", 20_000], ["LimitFetch, no limit", 300_000]]
    )
    expect(rows[2]["VmRSS"]).to eq("median" => 46.0, "min" => 45.0, "max" => 46.5)
    expect(rows[2]).to include("vs_basic_mb" => 5.0, "threads" => 16)
    expect(rows[2]["ratio"]).to be_within(1e-9).of(46.0 / 41.0)
    expect(rows[3]["vs_basic_mb"]).to eq(5.5)
    expect(rows[1]["vs_basic_mb"]).to eq(0.0)
    expect(LimitFetchBench::Summary.new([], options:, setup:, seconds: 1.0).to_h).not_to have_key("memory")
  end

  it "writes the section's table" do
    markdown = LimitFetchBench::Markdown.new(summary).render
    expect(markdown).to include("## Memory of a `sidekiq` process")
    expect(markdown).to include("| LimitFetch, no limit | 300000 | 47.0 (46.5–47.5) | +5.5 (×1.13) |")
  end
end
