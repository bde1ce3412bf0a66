# frozen_string_literal: true

$LOAD_PATH.unshift(File.expand_path("../../bench/lib", __dir__))
require "limit_fetch_bench"

# bin/bench's back_off section from made-up runs (no bench is run): its
# options (the downstream's capacity phases), a row per run with its wall
# time over the ideal and whether it ran clean, a skipped variant, and the
# Markdown table.
RSpec.describe "bin/bench's back_off section" do
  let(:options) { LimitFetchBench::Options.parse(%w[--only back_off]) }
  let(:setup) { {"redis" => "Redis 8.0.0", "proxy" => nil, "baseline" => nil} }
  let(:summary) { LimitFetchBench::Summary.new(runs, options: options, setup: setup, seconds: 1.0).to_h }
  let(:markdown) { LimitFetchBench::Markdown.new(summary).render }

  def run(variant, seconds:, retried: 0, after_changes: [], **figures)
    {"section" => "back_off", "variant" => variant, "round" => 1, "jobs" => 400, "seconds" => seconds,
     "ideal_seconds" => 5.0, "calls" => 440, "too_many" => 40, "too_many_share" => 40 / 440.0,
     "max_in_flight" => 4, "runs" => 400 + retried, "retried_jobs" => retried, "max_retry_count" => nil,
     "retry_set_max" => retried, "retry_set_end" => 0, "dead_set" => 0, "failed" => retried, "processed" => 400,
     "done_jobs" => 400, "done_once" => true, "done_more_than_once" => 0, "after_changes" => after_changes,
     "phases" => [[4, nil]], "timeout" => 60.0, "done_at" => {"50" => 2.5, "90" => 4.1, "99" => nil}, **figures}
  end

  let(:runs) do
    [{"section" => "back_off", "variant" => "back_off_adaptive", "round" => 1, "skipped" => "no BackOff",
      "jobs" => 400},
     run("back_off_fixed16", seconds: 7.5,
       after_changes: [{"capacity" => 2, "too_many_share" => 0.05, "capacity_used" => 0.9}],
       "settled_after_changes" => [{"capacity" => 2, "too_many_share" => 0.01, "capacity_used" => 0.95}]),
     run("back_off_none", seconds: 60.0, retried: 380),
     run("back_off_none", seconds: nil, retried: 380, "round" => 2, "done_jobs" => 120, "done_once" => false)]
  end

  it "parses the capacity phases, the last one's seconds optional, and refuses others by name" do
    phases = LimitFetchBench::Options.parse(%w[--back-off-phases 4:10,2:10,8])
    expect(LimitFetchBench::BackOffVariants.phases(phases)).to eq([[4, 10.0], [2, 10.0], [8, nil]])
    expect(LimitFetchBench::BackOffVariants.phases(options)).to eq([[4, nil]])
    expect { LimitFetchBench::Options.parse(%w[--back-off-phases 4,2:10]) }
      .to raise_error(OptionParser::InvalidArgument, /"4" is not CAPACITY:SECONDS/)
  end

  it "gives each run its time over the ideal, and whether it ran clean; a skipped one, why" do
    rows = summary["back_off"]
    expect(rows.map { _1["variant"] }).to eq(%w[back_off_adaptive back_off_fixed16 back_off_none back_off_none])
    expect(rows[0]).to include("skipped" => "no BackOff")
    expect(rows[1]).to include("vs_ideal" => 1.5, "clean" => true)
    expect(rows[2]).to include("vs_ideal" => 12.0, "clean" => false, "done_once" => true)
    expect(rows[3]).to include("round" => 2, "vs_ideal" => nil, "clean" => false)
    expect(summary["limit_checks"]).to be_empty
    expect(LimitFetchBench::Summary.new([], options:, setup:, seconds: 1.0).to_h).not_to have_key("back_off")
  end

  it "writes the section's table" do
    expect(markdown).to include("## Back-pressure: a downstream that answers 429")
    expect(markdown).to include("| LimitFetch, key: with concurrency: 1..16 (adaptive) (skipped: no BackOff) | – |")
    expect(markdown).to include("| 7.50 / 5.00 (×1.50) | 2.5 / 4.1 / – | 440 / 40 (9.1%) | 4 | 400 | 0 (–) | " \
                                "0 / 0 | 0 | 0 | yes (400 of 400 done, 0 more than once) | →2: 5.0%, 90% / 1.0%, 95% |")
    expect(markdown).to include("| not all done in 60.0 s (120 of 400) |")
    expect(markdown).to include("**no** (120 of 400 done, 0 more than once)")
  end
end
