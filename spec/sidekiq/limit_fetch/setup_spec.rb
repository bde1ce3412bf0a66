# frozen_string_literal: true

RSpec.describe Sidekiq::LimitFetch do
  describe "the class" do
    it "is a Sidekiq::BasicFetch" do
      expect(described_class.ancestors).to include(Sidekiq::BasicFetch)
    end

    it "defines its errors under Sidekiq::LimitFetch::Error < StandardError" do
      expect(described_class::Error.superclass).to eq(StandardError)
      expect(described_class::ConnectionError.superclass).to eq(described_class::Error)
      expect(described_class::CommandError.superclass).to eq(described_class::Error)
    end

    it "has the documented configuration defaults" do
      # the suite's before hook changes :poll_range, the saved copy is pristine
      expect(@saved_limit_fetch_configuration[:poll_range]).to eq(0.4..0.5)
      expect(@saved_limit_fetch_configuration[:heartbeat_period]).to eq(15)
    end
  end

  describe 'require "sidekiq-limit_fetch"' do
    it "installs itself through Sidekiq.configure_server: fetch class, setup on :startup, shutdown on :exit" do
      config = build_config(queues: %w[a], limits: {a: 2}, fetch_class: nil)
      expect(LimitFetchHelpers::SERVER_CONFIG_BLOCKS).not_to be_empty

      LimitFetchHelpers::SERVER_CONFIG_BLOCKS.each { |block| block.call(config) }
      expect(config.default_capsule.fetcher).to be_a(described_class)
      set_up_capsules << config.default_capsule

      config[:lifecycle_events][:startup].each(&:call)
      uuid = uuid_of(config.default_capsule)
      expect(registered_capsules).to eq([uuid])
      expect(redis.call("GET", queue_key("a", "limit"))).to eq("2")

      config[:lifecycle_events][:shutdown].each(&:call)
      expect(registered_capsules).to eq([uuid])

      config[:lifecycle_events][:exit].each(&:call)
      expect(registered_capsules).to eq([])
    end
  end

  describe ".setup" do
    it "registers the capsule under a UUID with a heartbeat and returns its client" do
      capsule = build_capsule(queues: %w[a])
      client = setup_capsule(capsule)

      expect(client.uuid).to be_a(String)
      expect(client.uuid).not_to be_empty
      expect(described_class.client(capsule).uuid).to eq(client.uuid)
      expect(registered_capsules).to eq([client.uuid])
      expect(redis.call("TTL", heartbeat_key(client.uuid))).to be_between(1, 4 * 15)
    end

    it "expires the heartbeat after four heartbeat periods" do
      described_class.configuration[:heartbeat_period] = 3
      capsule = build_capsule(queues: %w[a])
      uuid = setup_capsule(capsule).uuid

      expect(redis.call("PTTL", heartbeat_key(uuid))).to be_between(10_000, 12_000)
    end

    it "is idempotent: same UUID, one registration, no second heartbeat thread" do
      capsule = build_capsule(queues: %w[a], limits: {a: 1})
      heartbeats = -> { Thread.list.count { |thread| thread.alive? && thread.name.to_s.include?("limit_fetch") } }
      first = setup_capsule(capsule).uuid
      # a thread may name itself only once it runs
      wait_until(timeout: 2, message: "a thread named like limit_fetch") { heartbeats.call.positive? }
      threads = heartbeats.call
      second = setup_capsule(capsule).uuid
      sleep 0.2

      expect(second).to eq(first)
      expect(registered_capsules).to eq([first])
      expect(heartbeats.call).to eq(threads)
    end

    it "gives every capsule its own UUID" do
      config = build_config(queues: %w[a])
      other = add_capsule(config, "other", queues: %w[b])
      third = build_capsule(queues: %w[a])
      uuids = [config.default_capsule, other, third].map { |capsule| setup_capsule(capsule).uuid }

      expect(uuids.uniq.size).to eq(3)
      expect(registered_capsules).to eq(uuids.sort)
    end

    it "writes configured limits (symbol or string keys) only where Redis has no value" do
      redis.call("SET", queue_key("a", "limit"), "7")
      redis.call("SET", queue_key("b", "process_limit"), "9")
      capsule = build_capsule(queues: %w[a b c],
        limits: {:a => 2, "b" => 3},
        process_limits: {"a" => 1, :b => 4, :c => 0})
      setup_capsule(capsule)

      expect(redis.call("GET", queue_key("a", "limit"))).to eq("7")
      expect(redis.call("GET", queue_key("b", "limit"))).to eq("3")
      expect(redis.call("GET", queue_key("c", "limit"))).to be_nil
      expect(redis.call("GET", queue_key("a", "process_limit"))).to eq("1")
      expect(redis.call("GET", queue_key("b", "process_limit"))).to eq("9")
      expect(redis.call("GET", queue_key("c", "process_limit"))).to eq("0")
    end

    it "keeps a runtime value when another process boots with a different static limit" do
      setup_capsule(build_capsule(queues: %w[a], limits: {a: 2}))
      described_class::Global::QueueSemaphore.new(set_up_capsules.first, "a").limit = 5
      setup_capsule(build_capsule(queues: %w[a], limits: {a: 1}))

      expect(redis.call("GET", queue_key("a", "limit"))).to eq("5")
    end

    it "warns about a limit for a queue the capsule does not process" do
      capsule = build_capsule(queues: %w[a], limits: {a: 1, elsewhere: 2}, process_limits: {nowhere: 1})
      setup_capsule(capsule)

      warnings = spec_log.string.lines.grep(/\AWARN/)
      expect(warnings.grep(/elsewhere/)).not_to be_empty, "no WARN line names 'elsewhere' in:\n#{spec_log.string}"
      expect(warnings.grep(/nowhere/)).not_to be_empty, "no WARN line names 'nowhere' in:\n#{spec_log.string}"
      expect(redis.call("GET", queue_key("a", "limit"))).to eq("1")
    end

    {"negative" => -1, "fractional" => 2.5, "non-numeric" => "abc"}.each do |kind, bad|
      %i[limits process_limits].each do |option|
        it "rejects a #{kind} value in #{option} with an ArgumentError naming queue and value, writing nothing" do
          capsule = build_capsule(queues: %w[good bad_queue], option => {good: 2, bad_queue: bad})

          expect { setup_capsule(capsule) }.to raise_error(ArgumentError) { |error|
            expect(error.message).to include("bad_queue")
            expect(error.message).to include(bad.to_s)
          }
          expect(limit_fetch_keys).to eq([])
        end
      end
    end

    it "raises ConnectionError when Redis cannot be reached" do
      port = TCPServer.open("127.0.0.1", 0) { |server| server.addr[1] } # closed again: nothing listens
      capsule = build_capsule(queues: %w[a], limits: {a: 1}, redis_url: "redis://127.0.0.1:#{port}/0")

      expect { setup_capsule(capsule) }.to raise_error(described_class::ConnectionError)
    end

    {fetch_timeout: [0, -1, "2", Float::INFINITY], poll_range: [1..0, -1..1, 0..0, 0..0.5, "0.4..0.5", 0.4]}
      .each do |option, values|
        values.each do |bad|
          it "rejects #{option} #{bad.inspect} with an ArgumentError naming it, at boot, writing nothing" do
            described_class.configuration[option] = bad
            capsule = build_capsule(queues: %w[a], limits: {a: 1})

            expect { setup_capsule(capsule) }.to raise_error(ArgumentError, /#{option}.*#{Regexp.escape(bad.inspect)}/)
            expect(limit_fetch_keys).to eq([])
          end
        end
      end

    it "rejects limits that are not a Hash" do
      capsule = build_capsule(queues: %w[a], limits: [["a", 1]])

      expect { setup_capsule(capsule) }.to raise_error(ArgumentError, /limits/)
      expect(limit_fetch_keys).to eq([])
    end

    context "with Redis configured through Sidekiq's config" do
      after do
        [5, 6].each { |db| RedisServer.with_client(db: db) { |conn| conn.call("FLUSHDB") } }
      end

      it "uses REDIS_URL when the config names no Redis" do
        original = ENV.fetch("REDIS_URL")
        ENV["REDIS_URL"] = RedisServer.url_for_db(6)
        begin
          capsule = build_capsule(queues: %w[a], limits: {a: 4}, redis_url: nil)
          setup_capsule(capsule)
        ensure
          ENV["REDIS_URL"] = original
        end

        RedisServer.with_client(db: 6) do |conn|
          expect(conn.call("GET", queue_key("a", "limit"))).to eq("4")
        end
        expect(limit_fetch_keys).to eq([])
      end

      it "uses the Redis, down to the database, that Sidekiq's config points at" do
        RedisServer.with_client(db: 5) { |conn| conn.call("FLUSHDB") }
        capsule = build_capsule(queues: %w[a], limits: {a: 3}, redis_url: RedisServer.url_for_db(5))
        uuid = setup_capsule(capsule).uuid

        RedisServer.with_client(db: 5) do |conn|
          expect(conn.call("GET", queue_key("a", "limit"))).to eq("3")
          expect(conn.call("SMEMBERS", LimitFetchHelpers::CAPSULES_KEY)).to eq([uuid])
        end
        expect(limit_fetch_keys).to eq([])
      end
    end
  end

  describe ".shutdown" do
    it "deregisters the capsule, frees its slots and stops its heartbeat" do
      described_class.configuration[:heartbeat_period] = 1
      capsule = build_capsule(queues: %w[a b], limits: {a: 5})
      other = build_capsule(queues: %w[a])
      fetcher = fetcher_for(capsule)
      other_fetcher = fetcher_for(other)
      push_jobs("a", 3)
      push_jobs("b", 1)
      2.times { expect(fetcher.retrieve_work).not_to be_nil }
      expect(other_fetcher.retrieve_work.queue).to eq("queue:a")
      expect(fetcher.retrieve_work.queue).to eq("queue:b")
      uuid = uuid_of(capsule)
      other_uuid = uuid_of(other)

      described_class.shutdown(capsule)

      expect(registered_capsules).to eq([other_uuid])
      expect(redis.call("EXISTS", heartbeat_key(uuid))).to eq(0)
      expect(busy_entries("a")).to eq([other_uuid])
      expect(busy_entries("b")).to eq([])
      # a stopped heartbeat does not write its key again
      expect(holds_for?(2.5) { redis.call("EXISTS", heartbeat_key(uuid)).zero? }).to be(true),
        "the heartbeat key of a shut down capsule came back"
      expect(registered_capsules).to eq([other_uuid])
    end

    it "can be called twice" do
      capsule = build_capsule(queues: %w[a])
      setup_capsule(capsule)
      described_class.shutdown(capsule)

      expect { described_class.shutdown(capsule) }.not_to raise_error
      expect(registered_capsules).to eq([])
    end
  end
end
