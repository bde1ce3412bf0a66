# frozen_string_literal: true

require "time"
require_relative "../../tools/lib/limit_fetch_tools/downstream"
require_relative "../../tools/lib/limit_fetch_tools/partner_api"

# The simulated downstream (its own process, real sockets) through the
# partner API's client: a tenant's calls beyond its capacity answered 429
# at once with Retry-After, tenants apart, the capacity changed at run time,
# the stats and their time series, an HTTP-date Retry-After, keep-alive.
RSpec.describe LimitFetchTools::Downstream do
  def capacity = 3

  before(:all) { @downstream = described_class.new(capacity: capacity, retry_after: 0.2).start }
  after(:all) { @downstream&.remove }

  let(:downstream) { @downstream }
  let(:api) { PartnerApi.new(downstream.url) }

  before { downstream.reset(capacity: capacity, retry_after: 0.2, mode: "seconds") }

  # Each call in a thread of its own (its own connection): the response's
  # body, or the error raised.
  def concurrently(*tenants, millis:)
    tenants.map do |tenant|
      Thread.new do
        client = PartnerApi.new(downstream.url)
        client.call(tenant:, millis:)
      rescue PartnerApi::Error => e
        e
      ensure
        client.close
      end
    end
  end

  def refused(results) = results.grep(PartnerApi::TooManyRequests)

  def await_in_flight(tenant, count)
    wait_until(message: "#{count} calls of #{tenant} in flight") do
      downstream.stats.tenant(tenant)["in_flight"] == count
    end
  end

  it "answers 429 at once, with the Retry-After header, to exactly the call beyond a tenant's capacity" do
    results = concurrently(*["a"] * (capacity + 1), millis: 1000).map(&:value)

    expect(refused(results).size).to eq(1)
    error = refused(results).first
    expect(error.retry_after).to eq("0.2")
    expect(error.response).to include(status: 429, headers: include("retry-after" => "0.2"))
    expect(results - [error]).to all(eq("tenant" => "a", "ms" => 1000.0))
    stats = downstream.stats
    expect(stats.to_h).to include("calls" => 4, "ok" => 3, "too_many" => 1, "in_flight" => 0)
    expect(stats.tenant("a")).to include("calls" => 4, "too_many" => 1, "max_in_flight" => capacity)
  end

  it "refuses without holding the call, and admits again once a call in flight is done" do
    holding = concurrently(*["a"] * capacity, millis: 600)
    await_in_flight("a", capacity)
    started = LimitFetchTools.monotonic
    expect { api.call(tenant: "a", millis: 600) }.to raise_error(PartnerApi::TooManyRequests)
    expect(LimitFetchTools.monotonic - started).to be < 0.3
    holding.each(&:join)
    expect(api.call(tenant: "a", millis: 1)).to eq("tenant" => "a", "ms" => 1.0)
  end

  it "keeps each tenant's capacity apart" do
    holding = concurrently(*["a"] * capacity, millis: 600)
    await_in_flight("a", capacity)
    others = concurrently(*["b"] * capacity, millis: 100).map(&:value)

    expect(refused(others)).to be_empty
    expect(refused(holding.map(&:value))).to be_empty
    expect(downstream.stats.tenant("b")).to include("calls" => capacity, "too_many" => 0, "max_in_flight" => capacity)
  end

  it "takes a new capacity at run time, and records each change with its time" do
    downstream.capacity = 1
    expect(refused(concurrently("a", "a", millis: 800).map(&:value)).size).to eq(1)
    downstream.capacity = 5
    expect(refused(concurrently(*["a"] * 5, millis: 300).map(&:value))).to be_empty

    changes = downstream.stats.changes
    expect(changes.map { _1["capacity"] }).to eq([capacity, 1, 5])
    expect(changes.map { _1["t"] }).to eq(changes.map { _1["t"] }.sort)
    expect(changes.last["t"] - changes[1]["t"]).to be >= 0.8
    expect(downstream.stats.tenant("a")["max_in_flight"]).to eq(5)
  end

  it "samples the calls in flight every 50 ms, with the counters so far, and reads a window of them" do
    concurrently("a", "a", "b", millis: 500).each(&:join)
    stats = downstream.stats
    times = stats.samples.map { _1["t"] }

    gaps = times.each_cons(2).map { |earlier, later| later - earlier }
    expect(gaps.sort[gaps.size / 2]).to be_within(0.02).of(0.05)
    busy = stats.samples.select { _1["in_flight"] == 3 }
    expect(busy.size).to be >= 6
    expect(busy).to all(include("tenants" => {"a" => 2, "b" => 1}, "calls" => 3, "too_many" => 0, "capacity" => 3))
    window = stats.window(busy.first["t"], busy.last["t"], tenant: "a")
    expect(window).to include("mean_in_flight" => 2.0, "max_in_flight" => 2, "calls" => 0)
    expect(stats.window(0, stats["now"] + 1)).to include("calls" => 3, "too_many" => 0, "max_in_flight" => 3)
  end

  it "reads the stretch after each capacity change: calls, 429s, their share and the capacity used" do
    downstream.capacity = 2
    concurrently("a", "a", "a", millis: 800).each(&:join)

    after = downstream.stats.after_changes(seconds: 1.0, tenant: "a")
    expect(after.size).to eq(1)
    expect(after.first).to include("capacity" => 2, "calls" => 3, "too_many" => 1, "max_in_flight" => 2)
    expect(after.first["too_many_share"]).to be_within(0.001).of(1 / 3.0)
    expect(after.first["capacity_used"]).to be > 0.6
    settled = downstream.stats.after_changes(seconds: 0.3, settle: 1.2, tenant: "a").first
    expect(settled).to include("calls" => 0, "too_many" => 0, "mean_in_flight" => 0.0, "capacity_used" => 0.0)
  end

  it "gives Retry-After as an HTTP-date no earlier than the delay, in its date mode" do
    downstream.reset(retry_after: 2, mode: "date")
    holding = concurrently(*["a"] * capacity, millis: 400)
    await_in_flight("a", capacity)
    error = refused(concurrently("a", millis: 1).map(&:value)).first
    holding.each(&:join)

    expect(error.retry_after).to match(/\A\w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} GMT\z/)
    expect(Time.httpdate(error.retry_after) - Time.now).to be_between(1.0, 3.0)
    expect(downstream.stats.to_h).to include("retry_after_mode" => "date", "retry_after" => 2.0)
  end

  it "keeps the client's connection alive across calls" do
    3.times { api.call(tenant: "a", millis: 1) }
    api.close

    expect(downstream.stats.to_h).to include("calls" => 3, "connections" => 2) # the client's and /stats's own
  end

  it "answers a bad request 400, naming what was wrong" do
    expect { api.call(tenant: "a", millis: "soon") }.to raise_error(PartnerApi::Error) { |error|
      expect(error).not_to be_a(PartnerApi::TooManyRequests)
      expect(error.response).to include(status: 400, body: include('ms: \"soon\" is not a number'))
    }
    expect { downstream.capacity = -1 }.to raise_error(LimitFetchTools::Failure, /capacity: -1 is not an integer >= 0/)
  end
end
