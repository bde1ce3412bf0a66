# frozen_string_literal: true

# The gem's Redis keys as its tools and specs name them (Keys, the core's
# src/keys.rs through the binding): the data model sidekiq-limit_fetch v5
# shares, written out here so that a builder wired to the wrong one shows.
# tests/lua_prelude.rs holds the scripts' names to the same builders.
RSpec.describe Sidekiq::LimitFetch::Keys, :binding do
  it "names a queue's, a capsule's and a job limit's keys as the data model does" do
    names = {
      queue: ["a:b ü"], limit: ["a:b ü"], process_limit: ["a:b ü"], busy: ["a:b ü"], paused: ["a:b ü"],
      heartbeat: ["u-1"], in_progress: ["u-1", "a:b ü"], capsule_info: ["u-1"], capsule_queues: ["u-1"],
      capsule_limits: ["u-1"], job_limit: ['key:G@q#"1"'], job_busy: ['key:G@q#"1"'], parked: ['key:G@q#"1"'],
      rate: ["a:b ü"], starts: ["a:b ü"], limit_range: ["a:b ü"], adaptive: ["a:b ü"], job_rate: ['key:G@q#"1"'],
      job_starts: ['key:G@q#"1"']
    }.to_h { |builder, args| [builder, described_class.public_send(builder, *args)] }

    expect(names).to eq(
      queue: "queue:a:b ü",
      limit: "sidekiq:limit_fetch:queue:a:b ü:limit",
      process_limit: "sidekiq:limit_fetch:queue:a:b ü:process_limit",
      busy: "sidekiq:limit_fetch:queue:a:b ü:busy",
      paused: "sidekiq:limit_fetch:queue:a:b ü:paused",
      heartbeat: "sidekiq:limit_fetch:capsule:u-1:heartbeat",
      in_progress: "sidekiq:limit_fetch:capsule:u-1:inprogress:a:b ü",
      capsule_info: "sidekiq:limit_fetch:capsule:u-1:info",
      capsule_queues: "sidekiq:limit_fetch:capsule:u-1:queues",
      capsule_limits: "sidekiq:limit_fetch:capsule:u-1:limits",
      job_limit: 'sidekiq:limit_fetch:limit:key:G@q#"1":limit',
      job_busy: 'sidekiq:limit_fetch:limit:key:G@q#"1":busy',
      parked: 'sidekiq:limit_fetch:limit:key:G@q#"1":parked',
      rate: "sidekiq:limit_fetch:queue:a:b ü:rate",
      starts: "sidekiq:limit_fetch:queue:a:b ü:starts",
      limit_range: "sidekiq:limit_fetch:queue:a:b ü:limit_range",
      adaptive: "sidekiq:limit_fetch:queue:a:b ü:adaptive",
      job_rate: 'sidekiq:limit_fetch:limit:key:G@q#"1":rate',
      job_starts: 'sidekiq:limit_fetch:limit:key:G@q#"1":starts'
    )
  end

  it "names the shared keys and patterns, frozen" do
    constants = described_class.constants.sort.to_h { [_1, described_class.const_get(_1)] }

    expect(constants).to eq(
      ALIVE: "1", BEATS: "sidekiq:limit_fetch:beats", BUSY_PATTERN: "sidekiq:limit_fetch:queue:*:busy",
      CAPSULES: "sidekiq:limit_fetch:capsules", CENSUS: "sidekiq:limit_fetch:census", DEAD: "dead",
      DISCARDED: "sidekiq:limit_fetch:discarded", FORMAT: "sidekiq:limit_fetch:format",
      FORMATS: "sidekiq:limit_fetch:formats", LAST_BEAT: "sidekiq:limit_fetch:last_beat",
      OUTAGE: "sidekiq:limit_fetch:outage",
      PARKED: "sidekiq:limit_fetch:parked", PREFIX: "sidekiq:limit_fetch:",
      QUEUE_PATTERN: "sidekiq:limit_fetch:queue:*", QUEUE_PREFIX: "queue:", RATE_DUE: "sidekiq:limit_fetch:rate_due",
      RATE_PARKED: "sidekiq:limit_fetch:rate_parked",
      RECOVERIES: "sidekiq:limit_fetch:recoveries", RECOVERED: "sidekiq:limit_fetch:recovered",
      REGISTERED: "sidekiq:limit_fetch:registered", UNREGISTERED: "sidekiq:limit_fetch:unregistered"
    )
    expect(constants.values).to all(be_frozen)
  end

  it "tells the queue a key of one belongs to" do
    expect(%w[limit process_limit busy paused].map { described_class.queue_of(described_class.public_send(_1, "a:b")) })
      .to eq(["a:b"] * 4)
    expect(described_class.queue_of("sidekiq:limit_fetch:queue:a:other")).to be_nil
    expect(described_class.queue_of("queue:a")).to be_nil
  end
end
