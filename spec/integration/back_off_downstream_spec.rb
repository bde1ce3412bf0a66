# frozen_string_literal: true

require_relative "../support/sidekiq_app"
require_relative "../support/sidekiq_processes"
require_relative "../../tools/lib/limit_fetch_tools/downstream"
require_relative "../../bench/lib/limit_fetch_bench/back_off_jobs"

# Back-pressure end to end: a simulated downstream (LimitFetchTools::
# Downstream, its own process) admits 4 calls in flight per tenant and
# answers 429 with Retry-After: 0.2 beyond; one tenant's 400 jobs of 50 ms
# (LimitFetchBench::AdaptiveApiJob: key: and concurrency: 1..16, raising
# BackOff on a 429) run by 2 `sidekiq` processes of 10 threads. Every job
# is done once, none is retried, none lands in the retry or dead set, at
# most 10% of the calls are answered 429, and all is done within twice the
# ideal (400 × 50 ms / 4 = 5 s): the downstream holds 2 calls or more on
# average from its first to its last (by its own samples, so that a loaded
# machine's longer calls count as they took). Skipped where the gem has no
# BackOff.
RSpec.describe "a downstream's 429 backs its tenant off", :e2e do
  include SidekiqProcesses

  before(:context) do
    @app = SidekiqApp.new
    @downstream = LimitFetchTools::Downstream.new(capacity: 4, retry_after: 0.2).start
  end

  after(:context) do
    @app&.remove
    @downstream&.remove
  end

  let(:app) { @app }
  let(:downstream) { @downstream }
  let(:jobs_file) { File.expand_path("../../bench/lib/limit_fetch_bench/back_off_jobs.rb", __dir__) }

  before { skip "the gem has no Sidekiq::LimitFetch::BackOff" unless LimitFetchBench::BackOffJobs.back_off? }

  after do |example|
    app.warn_logs if example.exception
    app.stop_all
  end

  def start_processes(count, threads:)
    config = app.write_config("back_off", queues: [LimitFetchBench::BackOffJobs::QUEUE], concurrency: threads,
      timeout: 5)
    before = registered_capsules
    processes = Array.new(count) do |index|
      app.spawn("p#{index + 1}", config:, env: {"LF_TEST_REQUIRE" => jobs_file, "DOWNSTREAM_URL" => downstream.url})
    end
    await_registration(processes, before)
  end

  def job = LimitFetchBench.const_get(:AdaptiveApiJob)

  def done = redis.call("HGETALL", LimitFetchBench::BackOffJobs::DONE)

  it "runs one tenant's 400 jobs within twice the ideal, each once, none retried, at most 10% of calls refused" do
    start_processes(2, threads: 10)
    downstream.reset
    started = monotonic_now
    jids = Sidekiq::Client.push_bulk("class" => job, "args" => Array.new(400) { ["t", 50] })
    wait_until(timeout: 30, message: -> { "400 jobs done (#{done.size} so far)" }) { done.size == 400 }
    elapsed = monotonic_now - started

    expect(done).to eq(jids.to_h { [_1, "1"] })
    expect(elapsed).to be <= 20.0
    expect(redis.call("ZCARD", "retry")).to eq(0)
    expect(redis.call("ZCARD", "dead")).to eq(0)
    expect(redis.call("GET", "stat:failed").to_i).to eq(0)
    stats = downstream.stats
    expect(stats.too_many_share).to be <= 0.10, "#{stats["too_many"]} of #{stats["calls"]} calls answered 429"
    expect(stats.tenant("t")["max_in_flight"]).to eq(4)
    busy = stats.samples.select { _1["in_flight"].positive? }.map { _1["t"] }
    used = stats.window(busy.first, busy.last, tenant: "t")["mean_in_flight"]
    expect(used).to be >= 2.0, "#{used.round(2)} calls in flight on average (#{elapsed.round(2)} s in all)"
  end
end
