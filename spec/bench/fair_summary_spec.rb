# frozen_string_literal: true

$LOAD_PATH.unshift(File.expand_path("../../bench/lib", __dir__))
require "limit_fetch_bench"
require "limit_fetch_bench/fair_figures"
require "limit_fetch_bench/fair_run"

# bin/bench's fair section from made-up records and runs (no bench is run):
# the slots held over a window, when a tenant held them all again, first
# starts; a row per run with the cost variants' Redis CPU and its ratio, the
# limit check, the Markdown table.
RSpec.describe "bin/bench's fair section" do
  let(:figures) { LimitFetchBench::FairFigures }

  # `count` back-to-back jobs of `tenant` on each of `slots` slots from `at`, 0.05 s each.
  def jobs(tenant, slots:, count:, at: 0.0)
    Array.new(slots * count) do |i|
      start = at + ((i / slots) * 0.05)
      figures::Record.new(tenant, start, start + 0.05, "#{tenant}-#{i}")
    end
  end

  it "averages the slots held over a window, of the class or of a tenant" do
    records = jobs("a", slots: 6, count: 20) + jobs("b", slots: 4, count: 10)
    expect(figures.held(records, 0.0..1.0)).to be_within(1e-9).of(8.0)
    expect(figures.held(records, 0.5..1.0, tenant: "b")).to be_within(1e-9).of(0.0)
    expect(figures.shares(records, %w[a b], 0.0..0.5).transform_values { _1.round(6) }).to eq("a" => 6.0, "b" => 4.0)
    expect(figures.held(records, 1.0..1.0)).to be_nil
  end

  it "finds when a tenant held the slots again, and each tenant's first start" do
    records = jobs("a", slots: 4, count: 20) + jobs("a", slots: 10, count: 20, at: 1.0)
    expect(figures.regained(records, "a", 0.0..3.0, full: 9.5, window: 0.5)).to be_within(0.011).of(0.97)
    expect(figures.regained(records, "a", 0.0..1.2, full: 9.5, window: 0.5)).to be_nil
    late = jobs("t2", slots: 1, count: 1, at: 0.7) + jobs("t3", slots: 1, count: 1, at: 2.5)
    starts = figures.first_start_figures(records + late, %w[a t2 t3], [0.2, 0.3], 2.0)
    expect(starts).to include("started" => 2, "first_start_max" => 0.5, "tenants" => 3, "push_seconds" => 0.1)
  end

  it "renders a row per scenarios run with the cost ratio, and checks the class's most running" do
    share = {"section" => "fair", "variant" => "fair_share", "round" => 1, "fair_accepted" => true,
             "declarations" => {"FairJob" => "{fair}", "WeightedJob" => "{weighted}"},
             "sizes" => {"slots" => 10, "first_start_wait" => 10},
             "arrivals" => {"alone" => 9.71, "shares" => {"a" => 3.4, "b" => 3.3, "c" => 3.3},
                            "shares_while_all" => {"a" => 3.4, "b" => 3.3, "c" => 3.3}, "while_all_s" => 3.5,
                            "window_s" => 5.0,
                            "regained_s" => 0.12, "tally" => {"max_running" => 11, "done_once" => true, "jobs" => 10}}}
    cost = [["fair_cost", 30.0], ["fair_cost_plain", 20.0]].map do |variant, us|
      {"section" => "fair", "variant" => variant, "round" => 1, "cost" => {"redis_cpu_us_per_job" => us}}
    end
    options = LimitFetchBench::Options.parse(%w[--only fair])
    summary = LimitFetchBench::Summary.new([share, *cost], options:, seconds: 1.0,
      setup: {"redis" => "Redis 8.0.0", "proxy" => nil, "baseline" => nil}).to_h

    expect(summary["fair"].first["cost"]).to eq("fair" => 30.0, "plain" => 20.0, "ratio" => 1.5)
    expect(summary["limit_checks"]).to contain_exactly(include("queue" => "class (arrivals)", "ok" => false))
    table = LimitFetchBench::Markdown.new(summary).render
    expect(table).to include("| `{fair}` | 9.71 | 3.40 / 3.30 / 3.30 (5.0 s); 3.40 / 3.30 / 3.30 (3.5 s) | 0.12 | – |")
    expect(table).to include("| 11 / 10; yes (10 jobs) | 30.0 / 20.0 (×1.50) |")
  end

  it "takes the scenarios' sizes from --fair-sizes, and refuses a name it does not know" do
    options = LimitFetchBench::Options.parse(%w[--only fair --quick --fair-sizes tenants=20,settle=0.5])
    expect(LimitFetchBench::FairVariants.spec(options)["sizes"]).to include("tenants" => 20, "settle" => 0.5,
      "hot_jobs" => 5_000)
    expect { LimitFetchBench::Options.parse(%w[--fair-sizes tenant=20]) }
      .to raise_error(OptionParser::InvalidArgument, /"tenant=20" is not NAME=NUMBER/)
  end

  it "runs the queue form with --fair-form queue: a sidekiq.yml of each variant's, shown with its row" do
    options = LimitFetchBench::Options.parse(%w[--only fair --fair-form queue])
    spec = LimitFetchBench::FairVariants.spec(options).merge("log" => "/tmp/x/run.log", "redis_url" => "redis://x")
    configs = %w[fair_share fair_cost_plain].map do |variant|
      run = LimitFetchBench::FairRun.new(spec.merge("variant" => variant))
      [run.queue_config, run.declarations["FairJob"] || run.declarations["CostJob"]]
    end
    expect(configs).to eq([["fair_limits: {fair: 10}", LimitFetchBench::FairVariants::QUEUE_KEY],
                           ["limits: {fair: 10}", LimitFetchBench::FairVariants::QUEUE_KEY]])
    class_form = spec.merge("variant" => "fair_share", "form" => "class")
    expect(LimitFetchBench::FairRun.new(class_form).queue_config).to be_nil
    expect { LimitFetchBench::Options.parse(%w[--fair-form tenant]) }.to raise_error(OptionParser::InvalidArgument)

    share = {"section" => "fair", "variant" => "fair_share", "round" => 1, "fair_accepted" => true,
             "declarations" => {"FairJob" => "{key}", "WeightedJob" => "{weighted}"}, "queue_config" => configs[0][0],
             "sizes" => {"slots" => 10, "first_start_wait" => 10, "job_ms" => 50},
             "hot" => {"tally" => {"max_running" => 10, "done_once" => true, "jobs" => 5}}}
    summary = LimitFetchBench::Summary.new([share], options:, seconds: 1.0,
      setup: {"redis" => "Redis 8.0.0", "proxy" => nil, "baseline" => nil}).to_h
    expect(summary["limit_checks"]).to contain_exactly(include("queue" => "fair queue (hot)", "ok" => true))
    table = LimitFetchBench::Markdown.new(summary).render
    expect(table).to include("| `{key}` in `fair_limits: {fair: 10}` |", "the queue limited to 10 instead")
  end
end
