# frozen_string_literal: true

# The console API (Sidekiq::LimitFetch.queue, .queues, .capsules,
# .job_limit): read and change queues from a process with no capsule, against
# real capsules and embedded Sidekiq.
RSpec.describe Sidekiq::LimitFetch, "console API" do
  let(:webhooks) { described_class.queue("webhooks") }

  def ruby_threads
    Thread.list.reject { |thread| thread == Thread.current }
  end

  it "sets nothing up: no capsule registered, no thread started, from a process that is no Sidekiq server" do
    threads = ruby_threads
    capsule = build_capsule(queues: %w[webhooks])
    push_jobs("webhooks", 2)

    webhooks.limit = 3
    webhooks.process_limit = 1
    semaphore = Sidekiq::LimitFetch::Global::QueueSemaphore.new(capsule, "webhooks")
    semaphore.limit = 4
    readings = [webhooks.limit, webhooks.process_limit, webhooks.busy, webhooks.busy_by_process, webhooks.queued,
                semaphore.busy, semaphore.process_busy]
    webhooks.pause_for(60)
    readings += [webhooks.paused?, webhooks.explain.reason, webhooks.to_h[:paused]]
    webhooks.unpause
    described_class.queues.map(&:to_h)
    described_class.capsules
    described_class.job_limit(LimitFetchSpec::SyncJob, key: 7).to_h
    described_class.job_limits

    expect(readings).to eq([4, 1, 0, {}, 2, 0, 0, true, :paused, true])
    expect(registered_capsules).to be_empty
    expect(limit_fetch_keys).to eq([queue_key("webhooks", "limit"), queue_key("webhooks", "process_limit")])
    expect(described_class.client?(capsule)).to be_nil
    expect(ruby_threads).to match_array(threads)
  end

  it "validates limits once, in Ruby, and changes nothing on bad input" do
    webhooks.limit = 2
    webhooks.process_limit = 1

    [-1, 2.5, "abc", 2**53].each do |bad|
      expect { webhooks.limit = bad }.to raise_error(ArgumentError, /webhooks.*#{Regexp.escape(bad.inspect)}/)
      expect { webhooks.process_limit = bad }.to raise_error(ArgumentError, /process_limit.*webhooks/)
    end
    [0, -1, Float::NAN, "5", nil].each do |bad|
      expect { webhooks.pause_for(bad) }.to raise_error(ArgumentError, /pause_for/)
    end

    expect([webhooks.limit, webhooks.process_limit, webhooks.paused?]).to eq([2, 1, false])
    webhooks.limit = nil
    expect(webhooks.limit).to be_nil
    expect(redis.call("EXISTS", queue_key("webhooks", "limit"))).to eq(0)
  end

  it "counts busy slots by process identity, and sees a job this process just acknowledged as finished" do
    capsule = build_capsule(queues: %w[webhooks])
    fetcher = fetcher_for(capsule)
    push_jobs("webhooks", 3)
    units = Array.new(2) { fetcher.retrieve_work }
    # A capsule of sidekiq-limit_fetch v5 says nothing of itself: its UUID.
    redis.call("SADD", LimitFetchHelpers::CAPSULES_KEY, "v5-capsule")
    redis.call("SET", heartbeat_key("v5-capsule"), "1", "EX", 60)
    redis.call("RPUSH", queue_key("webhooks", "busy"), "v5-capsule")

    expect(webhooks.busy).to eq(3)
    expect(webhooks.busy_by_process).to eq(capsule.identity => 2, "v5-capsule" => 1)
    expect(webhooks.queued).to eq(1)

    units.first.acknowledge # rides on the next fetch, or goes within 2 ms
    expect(webhooks.busy).to eq(2)
    units.last.acknowledge
    expect(webhooks.explain.to_h).to include(reason: :eligible, busy: 1)
  end

  it "explains why the next job is or is not fetched" do
    push_jobs("webhooks", 3)
    expect(webhooks.explain.reason).to eq(:no_process)
    expect(webhooks.explain.to_s).to eq("no live process serves it")

    capsule = build_capsule(queues: %w[webhooks])
    fetcher = fetcher_for(capsule)
    expect(webhooks.explain.reason).to eq(:eligible)
    expect(webhooks.explain.to_s).to eq("eligible: 3 queued, 0 running")

    webhooks.process_limit = 1
    fetcher.retrieve_work
    expect(webhooks.explain.reason).to eq(:at_process_limit)
    expect(webhooks.explain.to_s).to eq("at its process limit 1 in #{capsule.identity}")
    expect(webhooks.explain.processes).to eq([capsule.identity])

    webhooks.limit = 1
    expect(webhooks.explain.to_s).to eq("at its global limit 1/1")
    expect(webhooks.explain.reason).to eq(:at_limit)

    webhooks.pause_for(90)
    explanation = webhooks.explain
    expect(explanation.reason).to eq(:paused)
    expect(explanation.to_s).to match(/\Apaused until \d\d:\d\d:\d\dZ\z/)
    expect(explanation.paused_until).to be_within(2).of(Time.now + 90)
    webhooks.pause
    expect(webhooks.explain.to_s).to eq("paused until unpaused")

    webhooks.unpause
    redis.call("DEL", "queue:webhooks")
    expect(webhooks.explain.to_s).to eq("empty")
    expect(Sidekiq::LimitFetch::Explanation::REASONS).to include(webhooks.explain.reason)
  end

  it "pauses a queue without touching its limit, for a time or until unpaused" do
    webhooks.limit = 3
    expect([webhooks.paused?, webhooks.paused_until]).to eq([false, nil])

    webhooks.pause
    expect([webhooks.paused?, webhooks.paused_until, webhooks.limit]).to eq([true, nil, 3])

    webhooks.pause_for(0.3)
    expect(webhooks.paused?).to be(true)
    expect(webhooks.paused_until).to be_within(0.3).of(Time.now + 0.3)
    wait_until(timeout: 2, message: "the pause to end by itself") { !webhooks.paused? }

    webhooks.pause
    expect(webhooks.unpause).to be(true)
    expect(webhooks.unpause).to be(false)
    expect(webhooks.limit).to eq(3)
  end

  it "wakes a fetcher of embedded Sidekiq, blocked on a paused queue, when it is unpaused and when a pause ends" do
    # Idle fetchers block far longer than the spec waits: only the doorbell
    # explains a prompt pickup.
    Sidekiq::LimitFetch.configuration[:fetch_timeout] = 30
    start_embedded(build_config(queues: %w[webhooks], concurrency: 1))
    webhooks.pause
    jid = push_jobs("webhooks", 1, seconds: 0).first
    expect(holds_for?(0.5) { done_jids.empty? }).to be(true)

    unpaused = monotonic_now
    webhooks.unpause
    wait_for_done([jid], timeout: 5)
    expect(monotonic_now - unpaused).to be < 1

    webhooks.pause_for(1)
    paused = monotonic_now
    second = push_jobs("webhooks", 1, seconds: 0).first
    wait_until(timeout: 5, message: "the second job after the pause") { done_jids.include?(second) }
    expect(monotonic_now - paused).to be_between(0.9, 2)
  end

  it "lists every queue worth showing, sorted, and the registered capsules" do
    redis.call("SADD", "queues", "sidekiq_only")
    described_class.queue("limit_only").process_limit = 2
    described_class.queue("paused_only").pause
    capsule = build_capsule(queues: %w[served other_served])
    setup_capsule(capsule)

    expect(described_class.queues.map(&:name)).to eq(%w[limit_only other_served paused_only served sidekiq_only])

    expect(described_class.capsules.size).to eq(1)
    entry = described_class.capsules.first
    expect(entry).to have_attributes(uuid: uuid_of(capsule), identity: capsule.identity, name: "default",
      queues: %w[served other_served], concurrency: 2, expired?: false)
    expect(entry.heartbeat_age).to be_between(0, 2)

    redis.call("DEL", heartbeat_key(uuid_of(capsule)))
    expect(described_class.capsules.map(&:expired?)).to eq([true])
    expect(described_class.queues.map(&:name)).to eq(%w[limit_only paused_only sidekiq_only])
  end

  it "reaches job limits the same way" do
    limit = described_class.job_limit(LimitFetchSpec::SyncJob, key: 42)
    expect(limit).to be_a(Sidekiq::LimitFetch::JobLimit)
    limit.limit = 3
    expect(Sidekiq::LimitFetch::JobLimit.for(LimitFetchSpec::SyncJob, key: 42).limit).to eq(3)
    expect(described_class.job_limits).to eq([])
  end

  it "gives everything as a plain Hash" do
    capsule = build_capsule(queues: %w[webhooks])
    fetcher = fetcher_for(capsule)
    push_jobs("webhooks", 2)
    webhooks.limit = 1
    fetcher.retrieve_work

    expect(webhooks.to_h).to eq(
      name: "webhooks", limit: 1, adaptive: nil, process_limit: nil, fair_limit: nil, busy: 1,
      busy_by_process: {capsule.identity => 1}, queued: 1, paused: false, paused_until: nil,
      rate: nil, rate_window: nil,
      explain: {reason: :at_limit, message: "at its global limit 1/1", busy: 1, limit: 1, process_limit: nil,
                queued: 1, paused_until: nil, processes: [], rate: nil, next_start_in: nil, adaptive: nil,
                fair_limit: nil, tenants: nil}
    )
  end
end
