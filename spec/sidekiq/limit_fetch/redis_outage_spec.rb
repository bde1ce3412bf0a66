# frozen_string_literal: true

# Runs against a redis-server of its own, which it stops and starts again.
RSpec.describe Sidekiq::LimitFetch, "when Redis goes away" do
  let(:port) { TCPServer.open("127.0.0.1", 0) { |server| server.addr[1] } }
  let(:url) { "redis://127.0.0.1:#{port}/0" }
  let(:own_redis) { RedisClient.config(url: url).new_client }

  def start_own_redis
    @own_pid = Process.spawn("redis-server", "--port", port.to_s, "--bind", "127.0.0.1", "--save", "",
      "--appendonly", "no", in: File::NULL, out: File::NULL, err: File::NULL)
    wait_until(timeout: 10, message: "redis-server on #{port}") do
      own_redis.call("PING")
    rescue RedisClient::ConnectionError
      false
    end
  end

  def stop_own_redis
    return unless @own_pid

    Process.kill("TERM", @own_pid)
    Process.wait(@own_pid)
    @own_pid = nil
  end

  # The block's value, failing the example if it takes more than +seconds+.
  def within(seconds, what)
    thread = Thread.new do
      Thread.current.report_on_exception = false
      yield
    end
    expect(thread.join(seconds)).not_to be_nil, "#{what} did not return within #{seconds}s"
    thread.value
  end

  before do
    described_class.configuration[:heartbeat_period] = 1
    start_own_redis
  end

  after do
    cleanup_limit_fetch # before the server goes, so that deregistration does not wait on it
    own_redis.close
    stop_own_redis
  end

  it "raises ConnectionError from #retrieve_work while Redis is down and works again once it is back" do
    capsule = build_capsule(queues: %w[a], limits: {a: 1}, redis_url: url)
    fetcher = fetcher_for(capsule)
    uuid = uuid_of(capsule)

    stop_own_redis
    expect { within(15, "retrieve_work with Redis down") { fetcher.retrieve_work } }
      .to raise_error(described_class::ConnectionError)

    start_own_redis # empty: limits, registration and heartbeat are gone
    own_redis.call("LPUSH", "queue:a", job_payload("a"))
    unit = wait_until(timeout: 15, message: "a fetch to work again") do
      fetcher.retrieve_work
    rescue described_class::Error
      nil
    end
    expect(unit.queue).to eq("queue:a")
    expect(own_redis.call("LRANGE", queue_key("a", "busy"), 0, -1)).to eq([uuid])
    # the heartbeat registers the capsule again
    wait_until(timeout: 10, message: "the capsule to register again") do
      own_redis.call("SISMEMBER", LimitFetchHelpers::CAPSULES_KEY, uuid) == 1 &&
        own_redis.call("EXISTS", heartbeat_key(uuid)) == 1
    end
    unit.acknowledge
    flush_acks(capsule)
    expect(own_redis.call("LLEN", queue_key("a", "busy"))).to eq(0)
  end

  it "keeps its heartbeat thread going through an outage and logs it" do
    capsule = build_capsule(queues: %w[a], redis_url: url)
    uuid = setup_capsule(capsule).uuid

    stop_own_redis
    wait_until(timeout: 10, message: -> { "a heartbeat error in the log:\n#{spec_log.string}" }) do
      spec_log.string.match?(/ERROR.*heartbeat/i)
    end
    start_own_redis

    wait_until(timeout: 10, message: "the heartbeat to come back") do
      own_redis.call("EXISTS", heartbeat_key(uuid)) == 1
    end
  end

  it "does not hang in .shutdown while Redis is down" do
    capsule = build_capsule(queues: %w[a], redis_url: url)
    setup_capsule(capsule)
    stop_own_redis

    within(15, "Sidekiq::LimitFetch.shutdown with Redis down") { described_class.shutdown(capsule) }
  end
end
