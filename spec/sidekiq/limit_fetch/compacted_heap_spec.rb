# frozen_string_literal: true

require "tempfile"
require_relative "../../support/own_redis_server"

# Sidekiq's CLI runs Process.warmup at boot, which compacts the heap (Ruby >=
# 3.3): every Ruby object the extension keeps beyond one call must be pinned
# or marked, or its first error raised afterwards crashes the process. Each
# error the extension can raise must arrive as the right Ruby exception
# after a compaction that moves everything movable.
RSpec.describe Sidekiq::LimitFetch, "after the heap was compacted", :binding do
  # Moves every movable object (and checks references), as Process.warmup may.
  def compact!
    GC.verify_compaction_references(expand_heap: true, toward: :empty)
  end

  let(:closed_port) { TCPServer.open("127.0.0.1", 0) { |server| server.addr[1] } }

  around do |example|
    auto_compact = GC.auto_compact
    GC.auto_compact = true
    compact!
    example.run
  ensure
    GC.auto_compact = auto_compact
  end

  it "carries jobs, limits and heartbeat reports across the binding intact" do
    # A process's capsule dies below; it beat last before this one started.
    redis.call("SET", LimitFetchHelpers::KEYS::LAST_BEAT, "dead-capsule", "EX", 600)
    capsule = build_capsule(queues: %w[a b], limits: {a: 2}, process_limits: {b: 1})
    fetcher = fetcher_for(capsule)
    queue = described_class::Global::QueueSemaphore.new(capsule, "a")
    payloads = push_payloads("a", Array.new(3) { |i| job_payload("a", args: ["tenant-\u00e9\u4e2d-#{i}"]) })
    compact!

    expect([queue.limit, queue.process_limit]).to eq([2, nil])
    queue.process_limit = 3
    units = Array.new(2) { fetcher.retrieve_work }
    compact!
    expect(units.map(&:queue)).to eq(%w[queue:a queue:a])
    expect(units.map(&:job)).to eq(payloads.first(2)) # pushed with LPUSH, fetched from the other end
    expect(units.map { _1.job.encoding }).to all(eq(Encoding::UTF_8))
    expect(fetcher.retrieve_work).to be_nil # a is at its limit of 2, b is empty
    expect([queue.busy, queue.process_busy, queue.process_limit]).to eq([2, 2, 3])

    units.first.acknowledge
    flush_acks(capsule)
    units.last.requeue
    compact!
    expect([queue.busy, queue.process_busy]).to eq([0, 0])
    fetcher.bulk_requeue([fetcher.retrieve_work])
    expect(redis.call("LRANGE", "queue:a", 0, -1)).to eq([payloads[2], payloads[1]])

    redis.call("SADD", LimitFetchHelpers::CAPSULES_KEY, "dead-capsule")
    # its heartbeat expired long ago (the capsule's own beats may have taken
    # this period's census, which finds capsules with no such entry)
    redis.call("ZADD", LimitFetchHelpers::KEYS::BEATS, 0, "dead-capsule")
    redis.call("RPUSH", queue_key("a", "busy"), "dead-capsule")
    orphan = job_payload("a", args: ["held by a dead process"])
    redis.call("LPUSH", in_progress_key("dead-capsule", "a"), orphan)
    redis.call("SADD", LimitFetchHelpers::KEYS.capsule_queues("dead-capsule"), "a")
    redis.call("SET", queue_key("b", "limit"), "lots")
    compact!
    described_class.client(capsule).beat
    expect(spec_log.string).to include("reaped dead capsule dead-capsule: freed 1 busy slots, pushed 1 in-progress")
    expect(spec_log.string).to include("limit of queue b (#{queue_key("b", "limit")}) is \"lots\"")
    expect(redis.call("LINDEX", "queue:a", -1)).to eq(orphan) # at the front, fetched next
  end

  it "raises ConnectionError when Redis refuses the connection, again and again" do
    3.times do
      capsule = build_capsule(queues: %w[a], redis_url: "redis://127.0.0.1:#{closed_port}/0")
      expect { described_class.setup(capsule) }.to raise_error(described_class::ConnectionError, /refused/)
      compact!
    end
  end

  it "raises CommandError when Redis answers with an error" do
    capsule = build_capsule(queues: %w[a])
    setup_capsule(capsule)
    redis.call("SET", queue_key("a", "busy"), "not a list")
    queue = described_class::Global::QueueSemaphore.new(capsule, "a")
    compact!

    expect { queue.busy }.to raise_error(described_class::CommandError, /WRONGTYPE/)
    compact!
    expect { queue.busy }.to raise_error(described_class::CommandError, /WRONGTYPE/)
  end

  it "raises ArgumentError for input the core refuses" do
    Tempfile.create(["not_a_ca", ".crt"]) do |file|
      file.write("-----BEGIN CERTIFICATE-----\nnot base64 at all!\n-----END CERTIFICATE-----\n")
      file.flush
      capsule = build_capsule(queues: %w[a], redis_url: nil)
      capsule.config.redis = {url: "rediss://127.0.0.1:#{closed_port}/0", ssl_params: {ca_file: file.path}}
      compact!

      expect { described_class.setup(capsule) }.to raise_error(ArgumentError, /CA certificates/)
    end
  end

  # Not in the GC stress run (binding: false): the whole wait is one call
  # into the extension, during which every allocation of every thread runs a
  # full GC, and the example takes minutes.
  it "raises what Thread#raise sent into a fetch waiting on Redis, and lets Thread#kill end it", binding: false do
    described_class.configuration[:fetch_timeout] = 10
    capsule = build_capsule(queues: %w[a])
    client = setup_capsule(capsule)
    interrupted = Class.new(StandardError)

    2.times do
      compact!
      waiting = Thread.new do
        Thread.current.report_on_exception = false
        client.fetch(%w[a], wait: true)
      end
      expect(waiting.join(0.3)).to be_nil, "the fetch returned although queue a is empty"
      waiting.raise(interrupted, "stop waiting")
      # Thread#join raises what ended the thread, or returns nil after 10 s
      # (GC stress makes everything slow; interrupt_spec.rb times it).
      expect { waiting.join(10) }.to raise_error(interrupted, "stop waiting")
    end

    killed = Thread.new { client.fetch(%w[a], wait: true) }
    expect(killed.join(0.3)).to be_nil
    compact!
    killed.kill
    expect(killed.join(10)).not_to be_nil, "the fetch did not give its thread back on Thread#kill"
    expect(killed).not_to be_alive
  end

  it "raises a Rust panic as Sidekiq::LimitFetch::Error" do
    2.times do
      expect { described_class::Native.panic_through_binding("a bug in the core") }
        .to raise_error(described_class::Error, "sidekiq-limit_fetch: internal error: a bug in the core")
      compact!
    end
  end

  it "keeps its heartbeat thread going while Redis is down, logging the errors it raises" do
    server = OwnRedisServer.new.start
    described_class.configuration[:heartbeat_period] = 0.2
    capsule = build_capsule(queues: %w[a], redis_url: server.url)
    setup_capsule(capsule)
    server.stop
    compact!

    wait_until(message: -> { "the heartbeat's failure in the log:\n#{spec_log.string}" }) do
      spec_log.string.include?("heartbeat failed: Sidekiq::LimitFetch::ConnectionError")
    end
    compact!
    wait_until(message: -> { "a second failure:\n#{spec_log.string}" }) do
      spec_log.string.include?("heartbeat still failing")
    end
    server.start
    wait_until(message: -> { "the heartbeat to recover:\n#{spec_log.string}" }) do
      spec_log.string.include?("heartbeat recovered")
    end
  ensure
    cleanup_limit_fetch
    server&.remove
  end
end
