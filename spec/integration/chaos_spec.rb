# frozen_string_literal: true

require_relative "../../chaos/lib/limit_fetch_chaos"

# bin/chaos in small (--quick): jobs pushed for 15 s to three `sidekiq`
# processes, a kill -9 and a replacement every ~2 s, a Redis restart halfway;
# its own Redis and app directory. Queue k's KeyedChaosJob carries job limits
# (1 per tenant, 3 of the class). The random choices follow RSpec's seed.
RSpec.describe "bin/chaos --quick", :e2e do
  it "loses no job, keeps every queue and job limit and leaves nothing behind while processes are killed " \
     "and Redis restarts" do
    out = StringIO.new
    options = LimitFetchChaos::Options.parse(["--quick", "--no-results", "--seed", RSpec.configuration.seed.to_s])
    report = LimitFetchChaos::Runner.new(options, out: out).run
    facts = report.to_h
    story = "#{out.string}\n#{LimitFetchChaos::Markdown.render(facts)}"

    expect(report.failures).to eq([]), story
    expect(facts[:jobs]).to include(lost: 0, repeated_unexplained: [])
    expect(facts[:jobs][:completed]).to eq(facts[:jobs][:enqueued])
    expect(facts[:concurrency].values).to all(satisfy { |seen| seen[:max] <= (seen[:limit] || seen[:max]) })
    expect(facts[:concurrency]["b"][:max_per_process]).to be <= 1
    expect(facts[:keyed]).to include(lost: 0, not_carried: 0, carried: facts[:keyed][:enqueued],
      completed: facts[:keyed][:enqueued], parked_most: be_positive)
    expect(facts[:job_limits].keys).to eq(LimitFetchChaos::Feeder::LIMIT_IDS)
    expect(facts[:job_limits].values).to all(satisfy { |seen| seen[:max] <= seen[:limit] })
    expect(facts[:chaos][:kills]).to be >= 2, story
    expect(facts[:chaos][:redis_restart]).to include(down_s: be >= LimitFetchChaos::Plan::REDIS_DOWN)
    expect(facts[:chaos][:redis_restart][:survived].size).to be >= LimitFetchChaos::Plan::PROCESSES
    expect(facts[:chaos][:redis_restart][:raised].values).to all(eq(heartbeat: true, fetch: true))
    expect(facts[:redis_after_stop]).to include(busy: {}, in_progress: {}, capsule_keys: [], capsules: [],
      job_limit_keys: {}, parked: [])
  end
end

RSpec.describe "bin/chaos's accounting" do
  let(:second) { 1_000_000_000 }

  def run(jid, worker, start, finish, cut: Float::INFINITY, queue: "a", tenant: nil)
    LimitFetchChaos::Run.new(jid: jid, worker: worker, queue: queue, start: start, finish: finish, cut: cut,
      tenant: tenant)
  end

  it "holds KeyedChaosJob's runs to their tenant's limit and the class's, naming the runs at an excess" do
    rows = [["j1", "w1", 0, 10, "t1"], ["j2", "w2", 5, 20, "t1"], ["j4", "w2", 40, 45, "t3"],
            ["j5", "w3", 42, 44, "t4"], ["j6", "w3", 43, 46, "t5"]]
    keyed = rows.map { |jid, worker, start, finish, tenant| run(jid, worker, start, finish, queue: "k", tenant:) }
    keyed += [run("j3", "w1", 30, nil, cut: 50, queue: "k", tenant: "t2"), run("j7", "w3", 0, 100, queue: "c")]
    seen = LimitFetchChaos::JobLimitConcurrency.of_keyed(keyed).to_h { [_1.id, _1] }

    expect(seen.transform_values(&:max)).to eq("class:KeyedChaosJob" => 4, "key:KeyedChaosJob#t1" => 2,
      "key:KeyedChaosJob#t2" => 1, "key:KeyedChaosJob#t3" => 1, "key:KeyedChaosJob#t4" => 1,
      "key:KeyedChaosJob#t5" => 1)
    expect(seen["key:KeyedChaosJob#t1"].violations).to eq(["job limit key:KeyedChaosJob#t1: 2 jobs ran at once, " \
                                                           "limit 1 (j1 in w1 from 0 to 10; j2 in w2 from 5 to 20)"])
    expect(seen["class:KeyedChaosJob"].at_peak.map { _1[/\Aj\d/] }).to contain_exactly(*%w[j3 j4 j5 j6])
    expect(seen["key:KeyedChaosJob#t2"].violations).to eq([])
  end

  it "counts runs that merely touch as overlapping, and an unfinished run until its process was seen gone" do
    touching = [run("j1", "w1", 0, 10), run("j2", "w2", 10, 20)]
    expect(LimitFetchChaos::Concurrency.peak(touching)).to eq(2)

    cut_short = [run("j1", "w1", 0, nil, cut: 100), run("j2", "w2", 50, 60)]
    expect(LimitFetchChaos::Concurrency.peak(cut_short)).to eq(2)
    expect(LimitFetchChaos::Concurrency.peak([run("j1", "w1", 0, 10), run("j2", "w2", 11, 20)])).to eq(1)
  end

  it "explains a repeat only by a kill that cut the earlier run short, or by the Redis restart" do
    killed = {"w1" => 10 * second}
    restart = LimitFetchChaos::Mayhem::Restart.new(at: 30.0, down_from: 30 * second, down_until: 31 * second,
      through: %w[w3])
    runs = [
      run("unfinished", "w1", 9 * second, nil, cut: 10 * second), run("unfinished", "w2", 20 * second, 21 * second),
      run("unacknowledged", "w1", 9 * second, 9.5 * second), run("unacknowledged", "w2", 20 * second, 21 * second),
      run("long_done", "w1", 1 * second, 2 * second), run("long_done", "w2", 20 * second, 21 * second),
      run("before_kill", "w1", 9 * second, nil, cut: 10 * second), run("before_kill", "w2", 9.5 * second, 9.6 * second),
      run("restart", "w3", 29.5 * second, 30.5 * second), run("restart", "w3", 40 * second, 41 * second)
    ]
    duplicates = LimitFetchChaos::Duplicates.new(runs, killed, restart)

    expect(duplicates.by_kill).to eq(2)
    expect(duplicates.by_restart).to eq(1)
    expect(duplicates.unexplained.map { _1[:jid] }).to contain_exactly("long_done", "before_kill")
  end
end
