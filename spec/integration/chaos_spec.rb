# frozen_string_literal: true

require_relative "../../chaos/lib/limit_fetch_chaos"

# bin/chaos in small (--quick): jobs pushed for 15 s to three `sidekiq`
# processes, a kill -9 and a replacement every ~2 s, a Redis restart halfway;
# its own Redis and app directory. The random choices follow RSpec's seed.
RSpec.describe "bin/chaos --quick", :e2e do
  it "loses no job, keeps every limit and leaves nothing behind while processes are killed and Redis restarts" do
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
    expect(facts[:chaos][:kills]).to be >= 2, story
    expect(facts[:chaos][:redis_restart]).to include(down_s: be >= LimitFetchChaos::Plan::REDIS_DOWN)
    expect(facts[:chaos][:redis_restart][:survived].size).to be >= LimitFetchChaos::Plan::PROCESSES
    expect(facts[:chaos][:redis_restart][:raised].values).to all(eq(heartbeat: true, fetch: true))
    expect(facts[:redis_after_stop]).to include(busy: {}, in_progress: {}, capsule_keys: [], capsules: [])
  end
end

RSpec.describe "bin/chaos's accounting" do
  let(:second) { 1_000_000_000 }

  def run(jid, worker, start, finish, cut: Float::INFINITY, queue: "a")
    LimitFetchChaos::Run.new(jid: jid, worker: worker, queue: queue, start: start, finish: finish, cut: cut)
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
