# frozen_string_literal: true

require "tmpdir"
$LOAD_PATH.unshift(File.expand_path("../../bench/lib", __dir__))
require "limit_fetch_bench"
require "limit_fetch_bench/fair_run"

# A class's 10 slots shared between tenants, between two real `sidekiq`
# processes of 10 threads, on jobs of 50 ms: bin/bench's fair scenarios
# (FairScenarios) scaled down, with the class declared
# `{concurrency: 10, fair: ->(tenant, *) { tenant }}`. Skipped while the
# gem refuses fair:; LIMIT_FETCH_FAIR_DECLARATION (Ruby source) runs them
# against another declaration instead (a key limit, to see them fail).
RSpec.describe "Fair share across sidekiq processes", :e2e do
  declaration = ENV.fetch("LIMIT_FETCH_FAIR_DECLARATION", nil)
  # Every time from Redis's clock; slots held: time inside perform. "full":
  # the slots a tenant must hold again once alone (bin/bench's 9.5), 8.5
  # here for the reason "alone" gives below; a tenant still sharing holds
  # about 4, so a share never given back still fails.
  sizes = {"full" => 8.5,
           "settle" => 0.5, "alone_jobs" => 1_000, "alone_seconds" => 2.0, "arrivals" => 100, "window" => 1.0,
           "regain_window" => 0.5, "regain_wait" => 2.0, "hot_jobs" => 1_000, "tenants" => 100, "tenant_jobs" => 10,
           "first_start_wait" => 5.0, "drain_timeout" => 30.0}

  before(:context) do
    unless declaration || LimitFetchBench::FairRun.fair_accepted?
      skip "fair: not yet accepted by Sidekiq::LimitFetch (JobLimits refuses it); " \
           "LIMIT_FETCH_FAIR_DECLARATION='{...}' runs these against another declaration"
    end

    @dir = Dir.mktmpdir("fair-share-e2e-")
    RedisServer.with_client { _1.call("FLUSHDB") }
    @result = LimitFetchBench::FairRun.new(
      "variant" => "fair_share", "redis_url" => RedisServer.url, "log" => File.join(@dir, "run.log"),
      "processes" => 2, "threads" => 10, "declaration" => declaration, "scenarios" => %w[arrivals hot],
      "sizes" => sizes
    ).run
  end

  after(:context) { FileUtils.rm_rf(@dir) if @dir }

  let(:arrivals) { @result["arrivals"] }

  it "gives a tenant alone all the slots" do
    # ≥ 9.5 in bin/bench; here 2 s on a shared machine: one slot idle for
    # 50 ms in every 100 ms would already cost 0.5 (a clean CI run measured
    # 8.91 with another process busy on the 2 CPUs). A tenant capped at a
    # share holds about 4.
    expect(arrivals["alone"]).to be >= 8.5
  end

  it "shares the slots between three tenants with work, and gives them back when the others are done" do
    # An integer split of 10 between 3 holds 4 + 3 + 3 at any moment, so each
    # tenant's average is between 3 and 4; half a slot more either way for
    # hand-overs over a window of about 1 s.
    expect(arrivals["shares_while_all"].values).to all(be_between(2.5, 4.5)), arrivals.inspect
    expect(arrivals["while_all_s"]).to be >= 0.5
    expect(arrivals["regained_s"]).to be <= 1.0, arrivals.inspect
  end

  it "starts every tenant's first job within 1 s behind another's backlog" do
    # 100 tenants, 10 jobs each: 100 first jobs take half a second of the
    # class's 10 slots; ten tenants would start within 1 s whatever the order.
    hot = @result["hot"]
    expect(hot["started"]).to eq(hot["tenants"])
    expect(hot["first_start_max"]).to be <= 1.0
  end

  it "never runs more than the class's 10 at once, and every job exactly once" do
    tallies = @result.values_at("arrivals", "hot").map { _1["tally"] }
    expect(tallies.map { _1["max_running"] }).to all(be_between(1, 10))
    expect(tallies).to all(include("done_once" => true, "not_done" => 0, "more_than_once" => 0, "unknown" => 0))
  end
end
