# frozen_string_literal: true

require_relative "../../support/own_redis_server"

# Jobs no one should push, and queues no one should let grow so long: Sidekiq
# handles each as it would with its own fetch, and the gem frees the slot.
RSpec.describe Sidekiq::LimitFetch, "with hostile input" do
  # The jobs of the capsule's queue +queue+ are all finished: no busy slot,
  # nothing in progress, nothing left in the queue.
  def expect_settled(capsule, queue)
    uuid = uuid_of(capsule)
    state = -> { "busy #{busy_entries(queue)}, in progress #{in_progress(uuid, queue).size}" }
    wait_until(timeout: 5, message: state) do
      busy_entries(queue).empty? && in_progress(uuid, queue).empty?
    end
    expect(queue_length(queue)).to eq(0)
  end

  describe "run by an embedded Sidekiq" do
    let(:config) { build_config(queues: %w[a], limits: {a: 1}, concurrency: 2) }

    # A job after the hostile one runs only if its slot was freed (limit 1).
    def run_then_follow(hostile)
      push_payloads("a", [hostile])
      follower = push_jobs("a", 1)
      start_embedded(config)
      wait_until(timeout: 15, message: "the job after it to run") { done_jids.include?(follower.first) }
      follower
    end

    it "sends malformed JSON to the dead set, as Sidekiq does, and frees its slot" do
      follower = run_then_follow("{not json")

      expect(done_jids).to eq(follower)
      expect(redis.call("ZRANGE", "dead", 0, -1)).to eq(["{not json"])
      expect_settled(config.default_capsule, "a")
    end

    it "retries a job of an unknown class, as Sidekiq does, and frees its slot" do
      job = JSON.parse(job_payload("a", klass: "NoSuchJobClass")).merge("retry" => true)
      follower = run_then_follow(JSON.generate(job))

      expect(done_jids).to eq(follower)
      retried = redis.call("ZRANGE", "retry", 0, -1).map { |payload| JSON.parse(payload) }
      expect(retried.map { |payload| payload.values_at("jid", "class", "error_class", "retry_count") })
        .to eq([[job["jid"], "NoSuchJobClass", "NameError", 0]])
      expect_settled(config.default_capsule, "a")
    end

    it "runs a job of 10 MB, acknowledges it and frees its slot" do
      big = JSON.generate(JSON.parse(job_payload("a")).merge("padding" => "x" * 10_000_000))
      expect(big.bytesize).to be > 10_000_000
      follower = run_then_follow(big)

      expect(done_jids).to eq([JSON.parse(big)["jid"], *follower])
      expect_settled(config.default_capsule, "a")
    end
  end

  # The fetch script does constant work per queue it looks at, whatever the
  # length of the queue: the commands it runs (counted by Redis, scripts'
  # commands included) are the same for 10 jobs as for 1,000,000.
  it "fetches from a queue of 1,000,000 jobs with the same Redis commands as from one of 10" do
    server = OwnRedisServer.new.start
    config = RedisClient.config(host: "127.0.0.1", port: server.port)
    settings = described_class::RedisOptions.from_client_config(config)
    native = described_class::Native.new(settings,
      described_class::CapsuleOptions.new(heartbeat_period: 3600, max_recoveries: 3, lookahead: 100,
        at_limit_warning_after: 60))
    admin = described_class::NativeAdmin.new(settings)
    # Filling the queue takes seconds on a loaded machine.
    server.with_client(read_timeout: 60) do |conn|
      fill = <<~LUA
        local batch = {}
        for i = 1, 1000 do batch[i] = ARGV[1] end
        for _ = 1, tonumber(ARGV[2]) / 1000 do redis.call('LPUSH', KEYS[1], unpack(batch)) end
        return redis.call('LLEN', KEYS[1])
      LUA
      job = job_payload("big")
      expect(conn.call("EVAL", fill, 1, "queue:big", job, 1_000_000)).to eq(1_000_000)
      expect(conn.call("EVAL", fill.sub("1, 1000", "1, 10").sub("/ 1000", "/ 10"), 1, "queue:small", job, 10)).to eq(10)
      %w[big small].each do |queue|
        admin.set_limit(queue, :limit, 5)
        admin.set_limit(queue, :process_limit, 5)
      end
      expect(native.fetch(%w[nothing], 0.0, 0.0)).to be_nil # connects and loads the script

      # Redis's own count of each command run during one fetch
      per_fetch = lambda do |queue|
        conn.call("CONFIG", "RESETSTAT")
        expect(native.fetch([queue], 0.0, 0.0)&.first).to eq(queue)
        stats = conn.call("INFO", "commandstats").scan(/^cmdstat_(\S+):calls=(\d+)/).to_h.transform_values(&:to_i)
        stats.except("config|resetstat", "info")
      end
      small = per_fetch.call("small")
      big = per_fetch.call("big")

      expect(big).to eq(small)
      # one script: both limits, the pause, the rate and whether jobs parked
      # behind a rate may go (one MGET), the busy count, the capsule's share
      # (of at most 5 entries), the pop and the bookings, none O(length of
      # the queue)
      expect(small).to eq("fcall" => 1, "mget" => 1, "llen" => 1, "lpos" => 1, "lmove" => 1, "rpush" => 1,
        "sadd" => 1)
      expect(conn.call("LLEN", "queue:big")).to eq(999_999)
    end
  ensure
    server&.remove
  end
end
