# frozen_string_literal: true

require_relative "../../chaos/lib/limit_fetch_chaos"

# bin/chaos in small (--quick): jobs pushed for 15 s to three `sidekiq`
# processes, a kill -9 and a replacement every ~2 s, Redis down for 20 s (2.5
# heartbeat expiries) once and a process frozen (SIGSTOP) for as long once,
# the faults' own time left out of the 15 s; its own Redis and app directory. The LIMITED classes' jobs carry job limits
# (1 per tenant; 3 of KeyedChaosJob's class; a group shared by two classes,
# one of whose keys is raised, lowered and reset while jobs run; keys per
# queue; a class that discards at its limit), and rates (of a class, per
# tenant of another, and of a class of 100 a second handed over on leased
# starts, many at once), checked from the jobs' own starts and the gem's
# count. The random
# choices follow RSpec's seed.
RSpec.describe "bin/chaos --quick", :e2e do
  it "loses no job, keeps every queue and job limit and rate and leaves nothing behind while processes are " \
     "killed, one is frozen and Redis is down for several heartbeat expiries" do
    out = StringIO.new
    options = LimitFetchChaos::Options.parse(["--quick", "--no-results", "--seed", RSpec.configuration.seed.to_s])
    report = LimitFetchChaos::Runner.new(options, out: out).run
    facts = report.to_h
    # What failed comes last too: a CI log keeps the end of a long message.
    story = "#{out.string}\n#{LimitFetchChaos::Markdown.render(facts)}\n\nFAILED: #{report.failures.join("\n")}"

    expect(report.failures).to eq([]), story
    expect(facts[:jobs]).to include(lost: 0, repeated_unexplained: [])
    expect(facts[:jobs][:completed] + facts[:jobs][:discarded]).to be >= facts[:jobs][:enqueued]
    expect(facts[:concurrency].values).to all(satisfy { |seen| seen[:max] <= (seen[:limit] || seen[:max]) })
    expect(facts[:concurrency]["b"][:max_per_process]).to be <= 1
    facts[:limited][:classes].each do |name, seen|
      carried = LimitFetchChaos::CARRY_NONE.include?(name) ? 0 : seen[:enqueued]
      expect(seen).to include(lost: 0, not_carried: seen[:enqueued] - carried, carried:), name
      expect(seen[:completed] + seen[:discarded]).to be >= seen[:enqueued], name
    end
    expect(facts[:limited]).to include(parked_most: be_positive)
    discards = facts[:limited][:discards]
    expect(discards).to include(jobs: be_positive)
    expect(discards[:logged] + discards[:unlogged]).to eq(discards[:jobs])
    expect(facts[:limited][:per_queue_most].values.max).to eq(2)
    expect(facts[:limited][:tuned].map { _1[:limit] }).to eq([1, 4, 2, 1])
    expect(facts[:limited][:tuned]).to all(satisfy { |stretch| stretch[:most] <= stretch[:limit] })
    expect(facts[:job_limits].keys).to eq(LimitFetchChaos::WatchedLimit.all.map(&:id))
    expect(facts[:job_limits].values).to all(include(over: nil))
    expect(facts[:job_limits].values).to all(satisfy { |seen| seen[:max] <= seen[:limit] })
    expect(facts[:rates].keys).to eq(LimitFetchChaos::RatedLimit.all.map(&:id))
    expect(facts[:rates].values).to all(include(windows_over: 0, starts: be_positive, parked_samples: be_positive))
    expect(facts[:rates].values).to all(satisfy { |seen| seen[:recorded][:most_in_period] <= seen[:limit] })
    expect(facts[:rates].values).to all(satisfy { |seen| seen[:longest_wait_s] <= seen[:stall_after_s] })
    expect(facts[:rates]["class:LeasedChaosJob"][:leases]).to include(of_more: be_positive, largest: be > 1)
    expect(facts[:chaos][:kills]).to be >= 2, story
    expect(facts[:chaos][:redis_restart]).to include(down_s: be >= LimitFetchChaos::Plan::REDIS_DOWN)
    expect(facts[:chaos][:redis_restart][:survived].size).to be >= LimitFetchChaos::Plan::PROCESSES
    expect(facts[:chaos][:redis_restart][:raised].values).to all(eq(heartbeat: true, fetch: true))
    expect(facts[:chaos][:freeze]).to include(seconds: be >= LimitFetchChaos::Plan::FREEZE, held: be_any)
    expect(facts[:booked_after_jobs].values).to all(eq({}))
    expect(facts[:redis_after_stop]).to include(busy: {}, in_progress: {}, capsule_keys: [], capsules: [],
      job_limit_keys: {}, parked: [], fair_waiting: {}, rate_keys: {}, strays: {})
  end
end

RSpec.describe "bin/chaos's accounting" do
  let(:second) { 1_000_000_000 }

  def run(jid, worker, start, finish, cut: Float::INFINITY, queue: "a", tenant: nil, written: nil)
    LimitFetchChaos::Run.new(jid: jid, worker: worker, queue: queue, start: start, finish: finish, cut: cut,
      tenant: tenant, written: written)
  end

  def of(limit_id, runs, schedule = nil)
    watched = LimitFetchChaos::WatchedLimit.all.find { _1.id == limit_id }
    LimitFetchChaos::JobLimitConcurrency.of(limit_id, watched.runs_of(runs),
      schedule || LimitFetchChaos::LimitSchedule.constant(watched.limit))
  end

  it "holds KeyedChaosJob's runs to their tenant's limit and the class's, naming the runs at an excess" do
    rows = [["j1", "w1", 0, 10, "t1"], ["j2", "w2", 5, 20, "t1"], ["j4", "w2", 40, 45, "t3"],
            ["j5", "w3", 42, 44, "t4"], ["j6", "w3", 43, 46, "t5"]]
    keyed = rows.map { |jid, worker, start, finish, tenant| run(jid, worker, start, finish, queue: "k", tenant:) }
    keyed += [run("j3", "w1", 30, nil, cut: 50, queue: "k", tenant: "t2"), run("j7", "w3", 0, 100, queue: "c")]
    ids = ["class:KeyedChaosJob", *%w[t1 t2 t3 t4 t5].map { "key:KeyedChaosJob##{_1}" }]
    seen = ids.to_h { [_1, of(_1, keyed)] }

    expect(seen.transform_values(&:max)).to eq("class:KeyedChaosJob" => 4, "key:KeyedChaosJob#t1" => 2,
      "key:KeyedChaosJob#t2" => 1, "key:KeyedChaosJob#t3" => 1, "key:KeyedChaosJob#t4" => 1,
      "key:KeyedChaosJob#t5" => 1)
    expect(seen["key:KeyedChaosJob#t1"].violations).to eq(["job limit key:KeyedChaosJob#t1: 2 jobs ran at once, " \
                                                           "limit 1 (j1 in w1 from 0 to 10; j2 in w2 from 5 to 20)"])
    expect(seen["class:KeyedChaosJob"].at_peak.map { _1[/\Aj\d/] }).to contain_exactly(*%w[j3 j4 j5 j6])
    expect(seen["key:KeyedChaosJob#t2"].violations).to eq([])
  end

  it "counts the two grouped classes' runs of a tenant together, and per-queue keys per queue" do
    grouped = [run("j1", "w1", 0, 10, queue: "g", tenant: "t1").with(job_class: "GroupedChaosJob"),
               run("j2", "w2", 5, 20, queue: "g", tenant: "t1").with(job_class: "CoGroupedChaosJob"),
               run("j3", "w1", 0, 20, queue: "p", tenant: "t1"), run("j4", "w2", 0, 20, queue: "q", tenant: "t1")]

    expect(of("key:chaos_tenants#t1", grouped).violations.first).to start_with("job limit key:chaos_tenants#t1: 2 jobs")
    expect([of("key:PerQueueChaosJob@p#t1", grouped).max, of("key:PerQueueChaosJob@q#t1", grouped).max]).to eq([1, 1])
  end

  it "holds a fair class's runs to its own slots, whatever their tenant, apart from the other fair class's" do
    fair = lambda do |jid, worker, start, finish, tenant, job_class = "FairChaosJob"|
      run(jid, worker, start, finish, queue: "f", tenant:).with(job_class:)
    end
    runs = [fair.call("j1", "w1", 0, 10, "big"), fair.call("j2", "w2", 1, 10, "big"),
            fair.call("j3", "w1", 2, 10, "mid"), fair.call("j4", "w2", 3, 10, "t1"),
            fair.call("j5", "w3", 4, 10, "t1", "WeightedFairChaosJob"),
            fair.call("j6", "w3", 5, 10, "gold", "WeightedFairChaosJob")]

    expect(of("class:FairChaosJob", runs).to_h).to include(max: 4, limit: 4, over: nil)
    expect(of("key:FairChaosJob#big", runs).max).to eq(2)
    expect(of("key:FairChaosJob#t1", runs).max).to eq(1)
    expect(of("class:WeightedFairChaosJob", runs).max).to eq(2)
    expect(of("class:FairChaosJob", [*runs, fair.call("j7", "w3", 9, 12, "t2")]).violations.first)
      .to start_with("job limit class:FairChaosJob: 5 jobs ran at once, limit 4 (j1 in w1")
  end

  it "holds the fair queue's runs to its slots, whatever their class or tenant, each key to its own limit" do
    fair = lambda do |jid, worker, start, finish, tenant, job_class = "FairQueueChaosJob"|
      run(jid, worker, start, finish, queue: "e", tenant:).with(job_class:)
    end
    runs = [fair.call("j1", "w1", 0, 10, "big"), fair.call("j2", "w2", 1, 10, "big"),
            fair.call("j3", "w1", 2, 10, nil, "KeylessFairQueueChaosJob"), fair.call("j4", "w3", 11, 12, "t1"),
            run("j5", "w3", 0, 20, queue: "f", tenant: "big").with(job_class: "FairChaosJob")]

    expect(of("queue:e", runs).to_h).to include(max: 3, limit: 3, over: nil)
    expect([of("key:FairQueueChaosJob#big", runs).max, of("class:KeylessFairQueueChaosJob", runs).max]).to eq([2, 1])
    over = [*runs, fair.call("j6", "w3", 5, 6, "t2")]
    expect(of("queue:e", over).violations.first)
      .to start_with("job limit queue:e: 4 jobs ran at once, limit 3 (j1 in w1")
    expect(of("key:FairQueueChaosJob#big", [*over, fair.call("j7", "w3", 5, 6, "big")]).violations.first)
      .to start_with("job limit key:FairQueueChaosJob#big: 3 jobs ran at once, limit 2")
  end

  it "tells what each fair class's tenant got: waits, starts behind another's backlog and while all had work" do
    ms = 1_000_000
    # big: 12 pushed at 0, begun one each 10 ms from 60 ms; t1 one pushed at 10 ms, begun at 20 ms behind big's 12;
    # at 100 ms mid, t1 and t2 (2) pushed: every tenant waits until mid's begins at 155 ms; t2's second never begins.
    later = {"t1a" => ["t1", 10 * ms], "m1" => ["mid", 100 * ms], "t2a" => ["t2", 100 * ms],
             "t2b" => ["t2", 100 * ms], "t1b" => ["t1", 100 * ms]}
    pushed = (1..12).to_h { ["b#{_1}", ["big", 0]] }.merge(later)
    begun = {"t1a" => 20 * ms, "m1" => 155 * ms, "t2a" => 165 * ms, "t1b" => 175 * ms}
    starts = (1..12).to_h { ["b#{_1}", (50 + (10 * _1)) * ms] }.merge(begun)
    runs = starts.map do |jid, at|
      run(jid, "w1", at, at + ms, queue: "f", tenant: pushed.fetch(jid)[0]).with(job_class: "FairChaosJob")
    end
    seen = LimitFetchChaos::FairShares.new("FairChaosJob", %w[big mid t1 t2], runs, pushed).to_h

    expect(seen.transform_values { _1.slice(:pushed, :begun, :wait_ms, :behind_large) })
      .to eq("big" => {pushed: 12, begun: 12, wait_ms: 120, behind_large: 0},
        "mid" => {pushed: 1, begun: 1, wait_ms: 55, behind_large: 0},
        "t1" => {pushed: 2, begun: 2, wait_ms: 75, behind_large: 1},
        "t2" => {pushed: 2, begun: 1, wait_ms: 65, behind_large: 0})
    # Begun from 100 ms to 155 ms: big's b5 to b10 and mid's m1.
    expect(seen.transform_values { _1.slice(:all_waiting, :all_waiting_share) })
      .to eq("big" => {all_waiting: 6, all_waiting_share: 86}, "mid" => {all_waiting: 1, all_waiting_share: 14},
        "t1" => {all_waiting: 0, all_waiting_share: 0}, "t2" => {all_waiting: 0, all_waiting_share: 0})
  end

  it "holds a limit changed at run time to the highest in force within FETCH_LAG before each start" do
    lag = LimitFetchChaos::FETCH_LAG
    tuner = LimitFetchChaos::Tuner.new(nil, nil, say: nil)
    # Raised to 3 by a call from 10 s to 11 s, lowered to 2 from 20 to 21 s, reset from 30 to 31 s.
    [[3, 10], [2, 20], [nil, 30]].each do |limit, at|
      tuner.changes << LimitFetchChaos::Tuner::Change.new(limit: limit, before: at * second,
        after: (at + 1) * second, at_s: at, stored: limit)
    end
    schedule = tuner.schedule
    expect(schedule.steps).to eq([[10 * second, 3], [21 * second, 2], [31 * second, 1]])

    hot = lambda { |*spans|
      spans.each_with_index.map do |(from, to), i|
        run("j#{i}", "w1", from, to, queue: "g", tenant: "hot")
      end
    }
    three_raised = hot.call([10 * second, 12 * second], [10 * second, 12 * second], [11 * second, 12 * second])
    expect(of("key:chaos_tenants#hot", three_raised, schedule).violations).to eq([])
    three_before = hot.call([9 * second, 12 * second], [9 * second, 12 * second], [9.5 * second, 12 * second])
    expect(of("key:chaos_tenants#hot", three_before, schedule).over).to include(seen: 3, limit: 1)

    # Fetched under 3 before the lowering took hold, started within FETCH_LAG after it: allowed.
    late = hot.call([20 * second, 22 * second], [20 * second, 22 * second], [(21 * second) + lag - 1, 22 * second])
    expect(of("key:chaos_tenants#hot", late, schedule).violations).to eq([])
    too_late = hot.call([20 * second, 23 * second], [20 * second, 23 * second], [(21 * second) + lag + 1, 23 * second])
    expect(of("key:chaos_tenants#hot", too_late, schedule).over).to include(seen: 3, limit: 2)

    after_reset = hot.call([40 * second, 41 * second], [40.5 * second, 42 * second])
    seen = of("key:chaos_tenants#hot", three_raised + after_reset, schedule)
    expect(seen.over).to include(seen: 2, limit: 1)
    expect(seen.phases.map { _1.slice(:limit, :most) }).to eq([{limit: 1, most: 0}, {limit: 3, most: 3},
                                                               {limit: 2, most: 0}, {limit: 1, most: 2}])
  end

  it "accounts for each discarded job by Redis's count and one log line naming its jid and its tenant's key" do
    tenants = {"d1" => "t1", "d2" => "t2", "k1" => "t1"}
    line = ->(jid, id, job_class = "DiscardChaosJob") { [job_class, jid, id] }
    good = [line.call("d1", "key:DiscardChaosJob#t1"), line.call("d2", "key:DiscardChaosJob#t2")]
    expect(LimitFetchChaos::Discards.new({"DiscardChaosJob" => 2}, good).problems(tenants)).to eq([])

    expect(LimitFetchChaos::Discards.new({"DiscardChaosJob" => 3}, good).problems(tenants))
      .to eq(["DiscardChaosJob: 3 discards counted in sidekiq:limit_fetch:discarded, 2 logged"])
    wrong = [line.call("d1", "key:DiscardChaosJob#t2"), line.call("k1", "key:KeyedChaosJob#t1", "KeyedChaosJob")]
    expect(LimitFetchChaos::Discards.new({"DiscardChaosJob" => 1, "KeyedChaosJob" => 1}, wrong).problems(tenants))
      .to eq(["jobs of classes that park were discarded: KeyedChaosJob 1",
              "a discard logged for no DiscardChaosJob pushed with that key: DiscardChaosJob d1 key:DiscardChaosJob#t2",
              "a discard logged for no DiscardChaosJob pushed with that key: KeyedChaosJob k1 key:KeyedChaosJob#t1"])
    twice = [good.first, good.first]
    expect(LimitFetchChaos::Discards.new({"DiscardChaosJob" => 2}, twice).problems(tenants))
      .to eq(["jobs discarded more than once: [\"d1\"]"])

    # A kill -9 cut off d3's line: counted, not logged, never completed.
    pushed = %w[d1 d2 d3 d4]
    cut = LimitFetchChaos::Discards.new({"DiscardChaosJob" => 3}, good, pushed:, completed: %w[d4])
    expect([cut.problems(tenants), cut.unlogged, cut.jids]).to eq([[], %w[d3], %w[d1 d2 d3]])
    # d4 lost beside it: the count no longer matches, both stay unexplained.
    lost = LimitFetchChaos::Discards.new({"DiscardChaosJob" => 3}, good, pushed:, completed: [])
    expect([lost.unlogged, lost.jids]).to eq([[], %w[d1 d2]])
    expect(lost.problems(tenants))
      .to eq(["DiscardChaosJob: 3 discards counted in sidekiq:limit_fetch:discarded, 2 logged"])
  end

  it "holds a rate's starts to its limit in any window of its period less RATE_SLACK, and the gem's count exactly" do
    rated = LimitFetchChaos::RatedLimit.all.find { _1.id == "key:TenantRatedChaosJob#t1" } # 5 per 1 s
    ms = 1_000_000
    starts = lambda do |*at, tenant: "t1", job_class: "TenantRatedChaosJob"|
      at.each_with_index.map do |t, i|
        run("#{tenant}-#{t}-#{i}", "w1", t * ms, (t + 10) * ms, queue: "r", tenant:).with(job_class:)
      end
    end
    others = starts.call(0, 1, 2, tenant: "t2") + starts.call(0, 1, 2, tenant: nil, job_class: "RatedChaosJob")
    # Two windows' bursts, fetched 1 s apart, one of the first begun 236 ms late: 6 within 1 s, allowed.
    late = starts.call(1, 2, 3, 4, 240, 1000, 1001, 1002, 1003, 1004)
    fetched = [0, 1, 2, 3, 4, 1000, 1001, 1002, 1003, 1004].map { _1 * ms }
    seen = LimitFetchChaos::RateWindows.of(rated, late + others, fetched)
    # Checked over the period less the lag and LEASE_AHEAD (a leased start is stamped up to 50 ms after its fetch).
    expect(seen.to_h).to include(starts: 10, most_in_period: 6, shortest_span_ms: 764.0,
      checked_ms: be_within(1).of(714), windows_over: 0,
      recorded: {starts: 10, most_in_period: 5, lag_ms: be_within(1).of(236), uncounted: 0})
    expect(seen.violations).to eq([])
    expect(LimitFetchChaos::RateWindows.of(rated, late, fetched.first(6)).lag).to be_nil

    # One begun 310 ms late (fetched at 4 ms): lags longer than RATE_SLACK are allowed, up to half the period.
    later = LimitFetchChaos::RateWindows.of(rated, starts.call(1, 2, 3, 4, 310, 1000, 1001, 1002, 1003, 1004), fetched)
    expect(later.to_h).to include(shortest_span_ms: 694.0, checked_ms: be_within(1).of(644), windows_over: 0)
    expect(later.violations).to eq([])
    # Leased starts, stamped 40 ms after the jobs began: paired, no lag.
    leased = LimitFetchChaos::RateWindows.of(rated, starts.call(0, 1, 2, 3, 4, 1000, 1001, 1002, 1003, 1004),
      fetched.map { _1 + (40 * ms) })
    expect(leased.lag).to be < ms
    # A start the gem did not count pairs with none: no lag, RATE_SLACK, and a violation of its own.
    uncounted = LimitFetchChaos::RateWindows.of(rated, starts.call(1, 2, 3, 4, 310, 600, 1000, 1001, 1002), fetched)
    expect(uncounted.to_h).to include(shortest_span_ms: 599.0, checked_ms: 750.0, windows_over: 1)
    expect(uncounted.violations.last).to eq("rate key:TenantRatedChaosJob#t1: 1 jobs started with no start of theirs " \
                                            "in the gem's count (within 1000 ms before each or 50 ms after): starts " \
                                            "it did not count")
    slow = LimitFetchChaos::RateWindows.of(rated, starts.call(700, 701, 702, 703, 704, 1000), fetched.first(6))
    expect([slow.lag, slow.checked_ms]).to match([be_within(ms).of(700 * ms), 500.0])

    crowded = LimitFetchChaos::RateWindows.of(rated, starts.call(0, 1, 2, 3, 4, 700, 1000), [0, 999].map { _1 * ms })
    expect(crowded.to_h).to include(windows_over: 1, shortest_span_ms: 700.0,
      recorded: {starts: 2, most_in_period: 2, lag_ms: nil, uncounted: 5})
    described = crowded.runs.first(6).map { "#{_1.jid} in w1 at #{_1.start}" }.join("; ")
    expect(crowded.violations.first).to eq(
      "rate key:TenantRatedChaosJob#t1: 6 jobs started within 700.0 ms, limit 5 in any 1 s (checked over 750 ms, the " \
      "rest the lag from fetch to start) (1 such windows) (#{described})"
    )
    expect(crowded.violations.size).to eq(2)
    gem_over = LimitFetchChaos::RateWindows.of(rated, [], [0, 1, 2, 3, 4, 999].map { _1 * ms })
    expect(gem_over.violations).to eq(["rate key:TenantRatedChaosJob#t1: the gem counted 6 starts within 1 s (its " \
                                       "starts set, on Redis's clock), limit 5"])
  end

  it "reads every start the gem counted from the append-only file, those of its functions and across a restart, " \
     "less a lease's starts given back" do
    server = LimitFetchTools::RedisServer.new(aof: true, args: %w[--auto-aof-rewrite-percentage 0]).start
    rated = LimitFetchChaos::RatedLimit.all.first(2)
    starts = rated.map { LimitFetchChaos::KEYS.job_starts(_1.id) }
    add = "redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2]); redis.call('PEXPIRE', KEYS[1], 1)"
    server.with_client do |redis|
      redis.call("EVAL", add, 1, starts[0], 1, "c1:1000")
      redis.call("ZADD", starts[1], 2, "c1:2000", 3, "c2:3000")
      redis.call("ZADD", "other", 4, "c1:4000")
      # A lease of two starts, one of them given back (src/lua/lease.lua).
      redis.call("ZADD", starts[1], 6, "c3.t#1:6000", 6, "c3.t#2:6000")
      redis.call("ZREM", starts[1], "c3.t#2:6000")
      sleep 0.01 # the first set has expired: its start is in the file alone
    end
    server.stop
    server.start
    server.with_client { _1.call("EVAL", add, 1, starts[0], 5, "c2:5000") }
    recorded = LimitFetchChaos::RecordedStarts.read(server.dir, rated)
    expect(rated.map { recorded.times(_1.id) }).to eq([[1_000_000, 5_000_000], [2_000_000, 3_000_000, 6_000_000]])
    expect(rated.map { recorded.leases(_1.id) })
      .to eq([{grants: 0, of_one: 0, of_more: 0, largest: 0, starts: 0, given_back: 0},
              {grants: 1, of_one: 0, of_more: 1, largest: 2, starts: 2, given_back: 1}])
  ensure
    server&.remove
  end

  it "asks of a rate the gem may lease many starts at once a lease of more than one start" do
    expect(LimitFetchChaos::RatedLimit.all.select(&:leased?).map(&:id)).to eq(["class:LeasedChaosJob"])
    recorded = LimitFetchChaos::RecordedStarts.new(LimitFetchChaos::RatedLimit.all.to_h { [_1.id, []] })
    stalls = LimitFetchChaos::Stalls.new(LimitFetchChaos::Stalls.rate_lines, limit: 5)
    problems = -> { LimitFetchChaos::RatesChecks.new([], [], stalls, recorded).problems.grep(/lease/) }
    recorded.record("class:LeasedChaosJob", "ZADD", [1, "c.t#1:1"])
    recorded.record("class:LeasedChaosJob", "ZADD", [2, "c:2"])
    expect(problems.call).to eq(["rate class:LeasedChaosJob: no lease of more than one start was granted"])
    recorded.record("class:LeasedChaosJob", "ZADD", [3, "c.t#1:3", 3, "c.t#2:3"])
    expect(problems.call).to eq([])
  end

  it "finds a rate's parked jobs waiting while none of its runs began within a period" do
    line = LimitFetchChaos::Stalls::Line.new(name: "rate r", keys: ["parked"], runs: ->(runs) { runs }, recent: second)
    stalls = LimitFetchChaos::Stalls.new([line], limit: 5)
    (0..40).each { stalls.samples << [_1 * second / 4, [3]] } # 0-10 s, 3 parked
    ran = [0, 1, 2, 9].map { run("j#{_1}", "w1", _1 * second, (_1 * second) + 10_000_000, queue: "r") }
    expect(stalls.found(ran)).to eq([{from: 3.25, seconds: 5.5, waiting: 3, line: "rate r"}])
    expect(stalls.longest(ran)).to eq("rate r" => {seconds: 5.5, waiting: 41, samples: 41})
    expect(stalls.found([*ran, run("j5", "w1", 5 * second, (5 * second) + 1, queue: "r")])).to eq([])
  end

  it "counts runs that merely touch as overlapping, and an unfinished run until its process was seen gone" do
    touching = [run("j1", "w1", 0, 10), run("j2", "w2", 10, 20)]
    expect(LimitFetchChaos::Concurrency.peak(touching)).to eq(2)

    cut_short = [run("j1", "w1", 0, nil, cut: 100), run("j2", "w2", 50, 60)]
    expect(LimitFetchChaos::Concurrency.peak(cut_short)).to eq(2)
    expect(LimitFetchChaos::Concurrency.peak([run("j1", "w1", 0, 10), run("j2", "w2", 11, 20)])).to eq(1)
  end

  it "explains a repeat only by a kill that found the job in the killed process's in-progress lists" do
    killed = {"w1" => 10 * second, "w4" => 31.1 * second, "w5" => 12 * second}
    held = {"w1" => %w[unfinished unacknowledged before_kill], "w4" => %w[outage], "w5" => nil}
    restart = LimitFetchChaos::Mayhem::Restart.new(at: 29.0, down_from: 29 * second, down_until: 31 * second,
      through: %w[w3 w4])
    runs = [
      run("unfinished", "w1", 9 * second, nil, cut: 10 * second), run("unfinished", "w2", 20 * second, 21 * second),
      run("unacknowledged", "w1", 9 * second, 9.5 * second), run("unacknowledged", "w2", 20 * second, 21 * second),
      # Ended while Redis was down; its end written once Redis was back, 0.1 s before the kill.
      run("outage", "w4", 28.5 * second, 29.2 * second, written: 31 * second),
      run("outage", "w3", 40 * second, 41 * second),
      # Acknowledged: gone from w1's in-progress list before the kill.
      run("acknowledged", "w1", 1 * second, 2 * second), run("acknowledged", "w2", 20 * second, 21 * second),
      run("before_kill", "w1", 9 * second, nil, cut: 10 * second), run("before_kill", "w2", 9.5 * second, 9.6 * second),
      # In flight across the outage in a process never killed.
      run("not_killed", "w3", 28.5 * second, 31.5 * second), run("not_killed", "w3", 40 * second, 41 * second),
      run("unknown", "w5", 11 * second, nil, cut: 12 * second), run("unknown", "w2", 20 * second, 21 * second)
    ]
    duplicates = LimitFetchChaos::Duplicates.new(runs, killed, held, restart)

    expect(duplicates.counts).to eq(killed_running: 1, killed_unacknowledged: 1, killed_after_outage: 1,
      frozen_reaped: 0)
    expect(duplicates.unexplained.map { _1[:jid] }).to contain_exactly("acknowledged", "before_kill", "not_killed",
      "unknown")
    why = duplicates.jobs.to_h { [_1[:jid], _1[:repeats].first] }
    expect(why["outage"]).to eq(category: :killed_after_outage,
      evidence: "in w4's in-progress list when it was killed, 100 ms after its end was written; it ended 1800 ms " \
                "before Redis came back, its acknowledgement due while Redis was down; ran again in w3 8900 ms after " \
                "the kill")
    expect(why["acknowledged"][:evidence]).to eq("not in w1's in-progress lists when it was killed")
    expect(why["not_killed"][:evidence]).to eq("w3 was not killed")
    failure = duplicates.unexplained_failure(shown: 1)
    expect(failure).to start_with("4 jobs ran more than once unexplained: acknowledged (")
      .and include("UNEXPLAINED: not in w1's in-progress lists when it was killed")
    expect(failure).not_to include("w3 was not killed")
    expect(LimitFetchChaos::Duplicates.new(runs.first(2), killed, held, restart).unexplained_failure).to be_nil
  end

  describe "faults" do
    let(:frozen) do
      LimitFetchChaos::Frozen.new(worker: "w1", from: 10 * second, to: 30 * second, held: %w[both early late],
        expiry: LimitFetchChaos::Plan::EXPIRY)
    end

    it "explains a repeat by a freeze longer than the expiry only for a job the frozen process held, " \
       "run again once its capsule could be taken for dead" do
      runs = [
        # Begun before the freeze, run on once woken; again in w2 9 s into it, at the same time.
        run("both", "w1", 9 * second, 31 * second), run("both", "w2", 19 * second, 20 * second),
        # Again 2 s into the freeze: its heartbeat could not have expired yet.
        run("early", "w1", 9 * second, 31 * second), run("early", "w2", 12 * second, 13 * second),
        # Fetched before the freeze, begun once woken; run in w2 meanwhile.
        run("late", "w2", 18 * second, 19 * second), run("late", "w1", 30.5 * second, 31 * second),
        # Not held: done before the freeze.
        run("done", "w1", 8 * second, 9 * second), run("done", "w2", 20 * second, 21 * second)
      ]
      duplicates = LimitFetchChaos::Duplicates.new(runs, {}, {}, nil, frozen: frozen)

      expect(duplicates.counts).to include(frozen_reaped: 2)
      expect(duplicates.unexplained.map { _1[:jid] }).to contain_exactly("early", "done")
      why = duplicates.jobs.to_h { [_1[:jid], _1[:repeats].first[:evidence]] }
      expect(why["both"]).to eq("in w1's in-progress list when it was frozen (SIGSTOP) for 20.0 s, 1000 ms into the " \
                                "run; ran again in w2 9000 ms after the freeze began at the same time")
      expect(why["early"]).to end_with("2000 ms after the freeze began at the same time, before its heartbeat " \
                                       "could have expired")
      expect(why["late"]).to include("fetched, not yet begun; begun 500 ms after it woke")
      expect(why["done"]).to eq("w1 was not killed")

      short = frozen.with(to: 15 * second)
      expect(LimitFetchChaos::Duplicates.new(runs.first(2), {}, {}, nil, frozen: short).unexplained.first[:repeats])
        .to eq([{category: nil, evidence: "in w1's in-progress list when it was frozen (SIGSTOP) for 5.0 s, 1000 ms " \
                                          "into the run; ran again in w2 9000 ms after the freeze began at the same " \
                                          "time, a freeze shorter than a heartbeat's expiry"}])
    end

    it "explains a job the frozen process held, ended unacknowledged, that it fetched again itself once woken" do
      runs = [
        # Ended as the freeze began, its acknowledgement not sent; reaped, pushed back, fetched by w1 woken.
        run("again", "w1", 9.95 * second, 9.99 * second, written: 9.99 * second),
        run("again", "w1", 30.1 * second, 30.2 * second),
        # Not held when it stopped: run twice by w1 unexplained.
        run("twice", "w1", 8 * second, 8.1 * second), run("twice", "w1", 30.1 * second, 30.2 * second)
      ]
      duplicates = LimitFetchChaos::Duplicates.new(runs, {}, {}, nil, frozen: frozen.with(held: %w[again]))

      expect(duplicates.counts).to include(frozen_reaped: 1)
      expect(duplicates.unexplained.map { _1[:jid] }).to eq(%w[twice])
      expect(duplicates.jobs.first[:repeats].first[:evidence]).to eq(
        "in w1's in-progress list when it was frozen (SIGSTOP) for 20.0 s, 10 ms after its end was written; " \
        "ran again in w1 20100 ms after the freeze began"
      )
    end

    it "explains a job the frozen process held, run elsewhere, booked again by it once woken and then killed" do
      runs = [
        # Fetched by w1 as it froze, reaped and run in w2; w1, woken at 30 s, booked it again, killed at 31 s.
        run("rebooked", "w2", 30.5 * second, 30.6 * second), run("rebooked", "w2", 31.5 * second, 31.6 * second),
        # The same two runs of a job w1 did not hold: unexplained.
        run("twice", "w2", 30.5 * second, 30.6 * second), run("twice", "w2", 31.5 * second, 31.6 * second),
        # Its second run begun before w1 was killed: unexplained.
        run("early", "w2", 30.5 * second, 30.6 * second), run("early", "w2", 30.8 * second, 30.9 * second)
      ]
      duplicates = LimitFetchChaos::Duplicates.new(runs, {"w1" => 31 * second}, {"w1" => []}, nil,
        frozen: frozen.with(held: %w[rebooked early]))

      expect(duplicates.counts).to include(frozen_reaped: 1)
      expect(duplicates.unexplained.map { _1[:jid] }).to contain_exactly("twice", "early")
      expect(duplicates.jobs.first[:repeats].first[:evidence]).to eq(
        "in w1's in-progress list when it was frozen (SIGSTOP) for 20.0 s; ran in w2 20500 ms after the freeze " \
        "began; booked again by w1 once woken, which was killed 1000 ms after it woke; ran again in w2 500 ms " \
        "after the kill"
      )
    end

    it "explains by a kill a job killed elsewhere before the freeze that the frozen process then took" do
      runs = [
        # Killed in w3 5 s before the freeze, taken by w1 just before it; again in w2 during it.
        run("killed", "w3", 4 * second, nil, cut: 5 * second), run("killed", "w1", 9 * second, 31 * second),
        run("killed", "w2", 19 * second, 20 * second)
      ]
      duplicates = LimitFetchChaos::Duplicates.new(runs, {"w3" => 5 * second}, {"w3" => %w[killed]}, nil,
        frozen: frozen.with(held: %w[killed]))

      expect(duplicates.unexplained).to eq([])
      expect(duplicates.counts).to include(killed_running: 1, frozen_reaped: 1)
    end

    it "leaves out of the limits' counts only the frozen process's runs of the jobs it held" do
      originals = [run("both", "w1", 9 * second, 31 * second), run("late", "w1", 30.5 * second, 31 * second)]
      others = [run("both", "w2", 19 * second, 20 * second), run("done", "w1", 8 * second, 9 * second),
                run("both", "w1", 32 * second, 33 * second)]

      expect((originals + others).select { frozen.original?(_1) }).to eq(originals)
      expect((originals + others).select { frozen.with(to: 15 * second).original?(_1) }).to eq([])
    end

    it "counts for a fair tenant's waiting jobs the runs of its group, whose slots they wait for" do
      tenant = LimitFetchChaos::WatchedLimit.all.find { _1.id == "key:FairQueueChaosJob#big" }
      other = run("t2", "w1", 0, second, queue: FairQueueChaosJob::QUEUE, tenant: "t2")
      expect(tenant.runs_of([other])).to eq([])
      expect(tenant.awaited_runs([other])).to eq([other])
      expect(LimitFetchChaos::Stalls.lines([FairQueueChaosJob::QUEUE]).map { _1.runs.call([other]).size })
        .to all(eq(1))
    end

    it "finds jobs waiting while none of theirs ran for longer than its limit, a gap in the samples ending a stretch" do
      line = LimitFetchChaos::Stalls::Line.new(name: "queue a", keys: ["queue:a"], runs: ->(runs) { runs })
      stalls = LimitFetchChaos::Stalls.new([line], limit: 6)
      (0..40).each { stalls.samples << [_1 * second / 4, [2]] } # 0-10 s, 2 waiting
      ran = [run("j1", "w1", 0, 3 * second)]
      expect(stalls.found(ran)).to eq([{from: 3.25, seconds: 6.75, waiting: 2, line: "queue a"}])
      expect(stalls.found([*ran, run("j2", "w1", 6 * second, 6 * second)])).to eq([])

      gapped = LimitFetchChaos::Stalls.new([line], limit: 6)
      [*0..20, *26..40].each { gapped.samples << [_1 * second / 4, [2]] } # Redis down from 5 to 6.5 s
      expect(gapped.found(ran)).to eq([])
    end
  end
end

RSpec.describe "bin/chaos's leftovers" do
  it "accepts the gem's keys kept by design, and the outage key only while a TTL it set runs" do
    prefix = LimitFetchChaos::PREFIX
    redis.call("SET", "#{prefix}queue:a:limit", "2")
    redis.call("SET", Sidekiq::LimitFetch::Keys.job_limit("queue:e"), "3")
    redis.call("HSET", "#{prefix}recoveries", "digest", "1")
    redis.call("SET", "#{prefix}recovered", "3")
    redis.call("SET", "#{prefix}format", "2:1764338400000")
    redis.call("SET", "#{prefix}outage", "1", "EX", LimitFetchChaos::Plan::EXPIRY)
    redis.call("SET", LimitFetchChaos::KEYS::CENSUS, "uuid", "PX", 400) # its TTL reads 0
    expect(LimitFetchChaos::Leftovers.read(redis, %w[a]).problems).to eq([])

    redis.call("PERSIST", "#{prefix}outage")
    redis.call("HSET", "#{prefix}unregistered", "uuid", "1")
    redis.call("HSET", "#{prefix}formats", "uuid", "2")
    left = LimitFetchChaos::Leftovers.read(redis, %w[a])
    expect(left.strays).to eq("#{prefix}outage" => "TTL -1", "#{prefix}unregistered" => "hash",
      "#{prefix}formats" => "hash")
    expect(left.problems).to eq(["other keys of the gem's left: #{left.strays}"])
  end

  it "counts a capsule's entry left in the beats' sorted set as a capsule left" do
    redis.call("ZADD", LimitFetchChaos::KEYS::BEATS, 0, "uuid")
    left = LimitFetchChaos::Leftovers.read(redis, %w[a])
    expect([left.capsules, left.strays]).to eq([["uuid"], {}])
  end

  it "finds slots still booked once the jobs have ended" do
    prefix = LimitFetchChaos::PREFIX
    expect(LimitFetchChaos::Booked.read(redis).problems).to eq([])

    redis.call("RPUSH", "#{prefix}queue:a:busy", "uuid", "uuid")
    redis.call("RPUSH", "#{prefix}limit:key:KeyedChaosJob#t1:busy", "uuid")
    booked = LimitFetchChaos::Booked.read(redis)
    expect(booked.to_h).to eq(busy: {"#{prefix}queue:a:busy" => 2}, in_progress: {},
      job_limits: {"#{prefix}limit:key:KeyedChaosJob#t1:busy" => 1}, rates: {}, fair_waiting: {})
    expect(booked.problems.size).to eq(2)
  end

  it "finds a fair class's tenants still waiting their turn, once the jobs have ended and after the stop" do
    waiting = Sidekiq::LimitFetch::Keys.fair_waiting("class:FairChaosJob")
    expect(waiting).to eq("#{LimitFetchChaos::PREFIX}limit:class:FairChaosJob:fair")
    redis.call("ZADD", waiting, "0.5", "key:FairChaosJob#big")

    left = LimitFetchChaos::Leftovers.read(redis, %w[f])
    expect([left.fair_waiting, left.job_limit_keys, left.strays]).to eq([{waiting => ["key:FairChaosJob#big"]}, {}, {}])
    expect(left.problems).to eq(["fair classes' tenants still waiting their turn: #{left.fair_waiting}"])
    expect(LimitFetchChaos::Booked.read(redis).problems)
      .to eq(["fair waiting still booked 2 heartbeat periods after the last job ended: #{left.fair_waiting}"])
  end

  it "finds what the rates keep once their windows have passed: starts, released counts, rate-parked limits" do
    prefix = LimitFetchChaos::PREFIX
    starts = Sidekiq::LimitFetch::Keys.job_starts("class:RatedChaosJob")
    redis.call("ZADD", starts, "5", "uuid:5")
    redis.call("SET", "#{prefix}limit:class:RatedChaosJob:released", "2")
    redis.call("ZADD", Sidekiq::LimitFetch::Keys::RATE_PARKED, "7", "class:RatedChaosJob")
    redis.call("RPUSH", Sidekiq::LimitFetch::Keys.parked("class:RatedChaosJob"), "{}")

    left = LimitFetchChaos::Leftovers.read(redis, %w[r])
    expect(left.rate_keys).to eq(starts => '["uuid:5"], TTL -1 ms',
      "#{prefix}limit:class:RatedChaosJob:released" => '"2", TTL -1 ms',
      Sidekiq::LimitFetch::Keys::RATE_PARKED => '["class:RatedChaosJob"], TTL -1 ms')
    expect(left.job_limit_keys).to eq(Sidekiq::LimitFetch::Keys.parked("class:RatedChaosJob") => 1)
    expect(left.strays).to eq({})
    expect(left.problems.size).to eq(2)
    expect(LimitFetchChaos::Booked.read(redis).rates).to eq(left.rate_keys)
  end
end
