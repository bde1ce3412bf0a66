# frozen_string_literal: true

require "digest"

# What comes out of the core is built of the Ruby side's Data classes
# (shapes.rb), read by member name: the heartbeat's report (Native, a
# capsule's work), the stored limits and the job limits' states (NativeAdmin,
# administration).
RSpec.describe Sidekiq::LimitFetch::Native, "answers", :binding do
  let(:settings) { Sidekiq::LimitFetch::RedisOptions.from_client_config(RedisClient.config(url: RedisServer.url)) }
  # A capsule's core handle with no heartbeat thread: only the example beats.
  let(:native) do
    options = Sidekiq::LimitFetch::CapsuleOptions.new(heartbeat_period: 15, max_recoveries: 1, lookahead: 100,
      at_limit_warning_after: 60)
    described_class.new(settings, options)
  end
  let(:admin) { Sidekiq::LimitFetch::NativeAdmin.new(settings) }
  let(:report_class) { Sidekiq::LimitFetch::BeatReport }
  let(:keys) { Sidekiq::LimitFetch::Keys }

  it "reports a beat as a BeatReport: reaped capsules, their dead jobs, corrections, orphans, restoration" do
    # a dead capsule, the last to beat before this one started (so this one
    # may take its silence for death at once), holding a job recovered
    # once already: it goes dead
    redis.call("SET", LimitFetchHelpers::KEYS::LAST_BEAT, "dead-one", "EX", 600)
    native.register
    poison = job_payload("a", klass: "PoisonJob")
    redis.call("SADD", LimitFetchHelpers::CAPSULES_KEY, "dead-one")
    redis.call("RPUSH", queue_key("a", "busy"), "dead-one")
    redis.call("LPUSH", in_progress_key("dead-one", "a"), poison)
    redis.call("SADD", keys.capsule_queues("dead-one"), "a")
    redis.call("HSET", keys::RECOVERIES, Digest::SHA1.hexdigest(poison), 1)
    # a job in this capsule's in-progress list that it does not hold, booked
    orphan = job_payload("b")
    redis.call("LPUSH", in_progress_key(native.uuid, "b"), orphan)
    redis.call("SADD", keys.capsule_queues(native.uuid), "b")
    redis.call("RPUSH", queue_key("b", "busy"), native.uuid)

    report = native.beat

    expect(report).to eq(report_class.new(
      reaped: [report_class::Reaped.new(uuid: "dead-one", freed: 1, requeued: 0,
        dead: [report_class::JobRef.new(queue: "a", jid: JSON.parse(poison)["jid"], job_class: "PoisonJob")],
        unregistered: false)],
      corrected: [report_class::Correction.new(key: queue_key("b", "busy"), before: 1, after: 0)],
      orphans: [report_class::Job.new(queue: "b", jid: JSON.parse(orphan)["jid"])],
      restored: false, lost_data: false, rebooked: [], finished: [], held_off: false,
      released: 0, format_switched: 2 # its census: the one live capsule speaks format 2
    ))
    redis.call("FLUSHDB")
    # The format's key went with the rest: the census writes it again.
    expect(native.beat).to eq(report_class.new(reaped: [], corrected: [], orphans: [], restored: true, lost_data: false,
      rebooked: [], finished: [], held_off: false, released: 0, format_switched: 2))
  end

  it "hands a discarded job over as [job, job limit id], the job a UTF-8 String as its queue held it, once" do
    limits = [{"id" => "key:HookJob#ü", "concurrency" => 1, "discard" => true}]
    first, duplicate = %w[a b].map do |jid|
      JSON.generate("limit_fetch" => limits, "queue" => "d", "class" => "HookJob", "args" => ["ü"], "jid" => jid)
    end
    redis.call("LPUSH", "queue:d", first, duplicate)
    native.register
    expect(native.fetch(%w[d], 0.0, 0.0)).to eq(["d", first])

    queue, job, discarded = native.fetch(%w[d], 0.0, 0.0)

    expect([queue, job, discarded]).to eq([nil, nil, [[duplicate, "key:HookJob#ü"]]])
    expect(discarded.flatten.map(&:encoding)).to all(eq(Encoding::UTF_8))
    expect(native.take_discarded).to eq([])
  end

  it "reports the stored limits as StoredLimits, kind by symbol, raw text as stored" do
    admin.set_limit("a", :limit, 3)
    redis.call("SET", queue_key("b", "process_limit"), "abc")

    expect(admin.stored_limits(%w[a b])).to eq([
      ["a", :limit, "3"], ["a", :process_limit, nil], ["b", :limit, nil], ["b", :process_limit, "abc"]
    ].map do |queue, kind, raw|
      Sidekiq::LimitFetch::StoredLimit.new(queue: queue, kind: kind, key: queue_key(queue, kind), raw: raw)
    end)
  end

  it "writes a queue's adaptive range with its floor, and reports its limit in force in its QueueState" do
    native.set_default_limits([Sidekiq::LimitFetch::DefaultLimit.new(name: "a", kind: :limit, value: 2)])
    native.set_default_ranges([Sidekiq::LimitFetch::DefaultRange.new(queue: "a", floor: 2, ceiling: 9)])
    redis.call("SET", queue_key("a", "adaptive"), "5 1")

    expect(redis.call("GET", queue_key("a", "limit_range"))).to eq("2..9")
    expect(admin.queue_states(%w[a b]).map { [_1.name, _1.limit, _1.adaptive] })
      .to eq([["a", 5, {value: 5, floor: 2, ceiling: 9}], ["b", nil, nil]])
    expect(admin.limit("a", :limit)).to eq(5)
  end

  it "reports job limits as JobLimitStates: stored limit or nil, running and parked jobs, stored rate" do
    admin.set_job_limit("class:ExportJob", 4)
    rate = Sidekiq::LimitFetch::Rate.new(limit: 5, period: 0.5)
    expect(admin.set_rate(:job_limit, "class:ExportJob", rate)).to eq(0)
    expect(redis.call("GET", keys.job_rate("class:ExportJob"))).to eq("5/0.5")
    2.times { redis.call("RPUSH", keys.job_busy("key:SyncJob#a"), "some-capsule") }
    redis.call("RPUSH", keys.parked("key:SyncJob#a"), job_payload("a"))

    state = Sidekiq::LimitFetch::JobLimitState
    expect(admin.job_limits(["class:ExportJob", "key:SyncJob#a"])).to eq(
      [state.new(id: "class:ExportJob", stored: 4, running: 0, parked: 0, stored_rate: rate, back_off: nil,
        adaptive: nil),
       state.new(id: "key:SyncJob#a", stored: nil, running: 2, parked: 1, stored_rate: nil, back_off: nil,
         adaptive: nil)]
    )
  end

  # The binding keeps the classes it reads, builds and raises in statics:
  # compaction must not move them from under it.
  it "reads its inputs, builds its answers and raises its errors after the heap was compacted" do
    GC.verify_compaction_references(expand_heap: true, toward: :empty)

    admin.set_limit("a", :limit, 1)
    expect(admin.stored_limits(%w[a]).first).to have_attributes(class: Sidekiq::LimitFetch::StoredLimit, raw: "1")
    expect(admin.job_limits(["class:A"]).first).to have_attributes(class: Sidekiq::LimitFetch::JobLimitState)
    expect(native.beat).to be_a(report_class)
    expect { described_class.panic_through_binding("boom") }.to raise_error(Sidekiq::LimitFetch::Error, /boom/)
  end
end
