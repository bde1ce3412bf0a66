# frozen_string_literal: true

require_relative "../../support/own_redis_server"

# Runs against a redis-server of its own, which it stops and starts again
# (empty: it persists nothing).
RSpec.describe Sidekiq::LimitFetch, "when Redis goes away" do
  let(:server) { OwnRedisServer.new }
  let(:url) { server.url }

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
    server.start
  end

  after do
    cleanup_limit_fetch # before the server goes, so that deregistration does not wait on it
    server.remove
  end

  it "raises ConnectionError from #retrieve_work while Redis is down and works again once it is back" do
    capsule = build_capsule(queues: %w[a], limits: {a: 1}, redis_url: url)
    fetcher = fetcher_for(capsule)
    uuid = uuid_of(capsule)

    server.stop
    expect { within(15, "retrieve_work with Redis down") { fetcher.retrieve_work } }
      .to raise_error(described_class::ConnectionError)

    server.start # empty: limits, registration and heartbeat are gone
    server.call("LPUSH", "queue:a", job_payload("a"))
    unit = wait_until(timeout: 15, message: "a fetch to work again") do
      fetcher.retrieve_work
    rescue described_class::Error
      nil
    end
    expect(unit.queue).to eq("queue:a")
    expect(server.call("LRANGE", queue_key("a", "busy"), 0, -1)).to eq([uuid])
    # the heartbeat registers the capsule again
    wait_until(timeout: 10, message: "the capsule to register again") do
      server.call("SISMEMBER", LimitFetchHelpers::CAPSULES_KEY, uuid) == 1 &&
        server.call("EXISTS", heartbeat_key(uuid)) == 1
    end
    unit.acknowledge
    flush_acks(capsule)
    expect(server.call("LLEN", queue_key("a", "busy"))).to eq(0)
  end

  it "keeps its heartbeat thread going through an outage and logs it" do
    capsule = build_capsule(queues: %w[a], redis_url: url)
    uuid = setup_capsule(capsule).uuid

    server.stop
    wait_until(timeout: 10, message: -> { "a heartbeat error in the log:\n#{spec_log.string}" }) do
      spec_log.string.match?(/ERROR.*heartbeat/i)
    end
    server.start

    wait_until(timeout: 10, message: "the heartbeat to come back") do
      server.call("EXISTS", heartbeat_key(uuid)) == 1
    end
  end

  it "does not hang in .shutdown while Redis is down" do
    capsule = build_capsule(queues: %w[a], redis_url: url)
    setup_capsule(capsule)
    server.stop

    within(15, "Sidekiq::LimitFetch.shutdown with Redis down") { described_class.shutdown(capsule) }
  end
end
