# frozen_string_literal: true

# Real Sidekiq (Sidekiq::Embedded: launcher, managers, processors) fetching
# through Sidekiq::LimitFetch. Each Sidekiq::Config stands for one process.
RSpec.describe Sidekiq::LimitFetch, "running embedded Sidekiq" do
  it "keeps a global limit across processes" do
    # A process that keeps its slots busy takes a freed one again at once,
    # while the others poll: with 2 threads the first cannot hold all 3.
    configs = [2, 4].map { |threads| build_config(queues: %w[limited], limits: {limited: 3}, concurrency: threads) }
    jids = push_jobs("limited", 30, seconds: 0.1)
    configs.each { |config| start_embedded(config) }

    wait_for_done(jids)

    expect(max_running("limited")).to be_between(2, 3)
    expect(max_running_per_worker("limited").size).to eq(2)
  end

  it "keeps a process limit in each process" do
    configs = Array.new(2) { build_config(queues: %w[limited], process_limits: {limited: 2}, concurrency: 4) }
    jids = push_jobs("limited", 30, seconds: 0.1)
    configs.each { |config| start_embedded(config) }

    wait_for_done(jids)

    per_worker = max_running_per_worker("limited")
    expect(per_worker.size).to eq(2)
    expect(per_worker.values).to all(be_between(1, 2))
    # more than one process's share ran at once: the limit is per process
    expect(max_running("limited")).to be_between(3, 4)
  end

  it "keeps both limits together" do
    configs = Array.new(3) do
      build_config(queues: %w[limited], limits: {limited: 3}, process_limits: {limited: 2}, concurrency: 3)
    end
    jids = push_jobs("limited", 40, seconds: 0.08)
    configs.each { |config| start_embedded(config) }

    wait_for_done(jids)

    expect(max_running("limited")).to be_between(2, 3)
    expect(max_running_per_worker("limited").values).to all(be_between(1, 2))
  end

  it "runs unlimited queues next to a limited one at full concurrency" do
    config = build_config(queues: %w[limited free], limits: {limited: 1}, concurrency: 4)
    jids = push_jobs("limited", 8, seconds: 0.1) + push_jobs("free", 24, seconds: 0.1)
    start_embedded(config)

    wait_for_done(jids)

    expect(max_running("limited")).to eq(1)
    expect(max_running("free")).to be >= 3
  end

  it "limits each capsule of a process on its own" do
    config = build_config(queues: %w[shared], process_limits: {shared: 1}, concurrency: 3)
    add_capsule(config, "second", queues: %w[shared], concurrency: 3)
    jids = push_jobs("shared", 16, seconds: 0.1)
    start_embedded(config)

    wait_for_done(jids)

    per_worker = max_running_per_worker("shared")
    expect(per_worker.keys.map { |worker| worker.split("/")[1] }.sort).to eq(%w[default second])
    expect(per_worker.values).to all(eq(1))
    expect(max_running("shared")).to eq(2)
  end

  it "pauses a queue with limit 0 without touching the running job, and resumes" do
    config = build_config(queues: %w[a], concurrency: 3)
    capsule = config.default_capsule
    gated = push_jobs("a", 1, seconds: 20, gate: "first")
    start_embedded(config)
    wait_until(message: "the gated job to start") { started("a").size == 1 }

    described_class::Global::QueueSemaphore.new(capsule, "a").limit = 0
    rest = push_jobs("a", 3, seconds: 0.01)
    open_gate("first")
    wait_until(message: "the running job to finish while paused") { done_jids == gated }

    expect(holds_for?(1.5) { started("a").size == 1 }).to be(true), "a paused queue started #{started("a")}"
    expect(queue_length("a")).to eq(3)

    described_class::Global::QueueSemaphore.new(capsule, "a").limit = nil
    wait_for_done(gated + rest)
  end

  it "applies a runtime limit change to running processes" do
    configs = Array.new(2) { build_config(queues: %w[tunable], limits: {tunable: 1}, concurrency: 3) }
    jids = push_jobs("tunable", 40, seconds: 0.1)
    configs.each { |config| start_embedded(config) }
    wait_until(message: "4 jobs done") { done_jids.size >= 4 }
    expect(max_running("tunable")).to eq(1)

    described_class::Global::QueueSemaphore.new(configs.first.default_capsule, "tunable").limit = 4

    wait_until(timeout: 10, message: -> { "more than one job running at once, max is #{max_running("tunable")}" }) do
      max_running("tunable") > 1
    end
    wait_for_done(jids)
    expect(max_running("tunable")).to be_between(2, 4)
  end

  it "keeps its registration and slots while draining and deregisters on exit" do
    config = build_config(queues: %w[a], limits: {a: 1}, concurrency: 2)
    capsule = config.default_capsule
    gated = push_jobs("a", 1, seconds: 20, gate: "drain")
    queued = push_jobs("a", 1)
    instance = start_embedded(config)
    uuid = uuid_of(capsule)
    wait_until(message: "the gated job to start") { started("a").size == 1 }

    stopper = Thread.new { stop_embedded(instance) }
    sleep 1.5 # quiet, :shutdown fired, waiting for the job
    expect(stopper).to be_alive
    expect(registered_capsules).to eq([uuid])
    expect(busy_entries("a")).to eq([uuid])

    open_gate("drain")
    expect(stopper.join(15)).not_to be_nil, "Sidekiq did not stop within 15 s"

    expect(done_jids).to eq(gated)
    expect(queue_length("a")).to eq(1)
    expect(registered_capsules).to eq([])
    expect(busy_entries("a")).to eq([])
    expect(redis.call("EXISTS", heartbeat_key(uuid))).to eq(0)
    expect(queued).not_to be_empty
  end

  it "pushes back a job still running at the shutdown deadline and frees its slot" do
    config = build_config(queues: %w[a], limits: {a: 1}, concurrency: 1)
    config[:timeout] = 1
    gated = push_jobs("a", 1, seconds: 30, gate: "never")
    instance = start_embedded(config)
    wait_until(message: "the gated job to start") { started("a").size == 1 }

    stop_embedded(instance)

    expect(done_jids).to eq([])
    expect(queue_length("a")).to eq(1)
    expect(JSON.parse(redis.call("LINDEX", "queue:a", 0))["jid"]).to eq(gated.first)
    expect(busy_entries("a")).to eq([])
    expect(registered_capsules).to eq([])
  end
end
