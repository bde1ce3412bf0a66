# frozen_string_literal: true

RSpec.describe Sidekiq::LimitFetch::Global::QueueSemaphore do
  let(:capsule) { build_capsule(queues: %w[webhooks other]) }
  let(:semaphore) { described_class.new(capsule, "webhooks") }

  before { setup_capsule(capsule) }

  it "reads and writes the global limit" do
    expect(semaphore.limit).to be_nil

    semaphore.limit = 5

    expect(semaphore.limit).to eq(5)
    expect(redis.call("GET", queue_key("webhooks", "limit"))).to eq("5")
  end

  it "reads and writes the process limit" do
    expect(semaphore.process_limit).to be_nil

    semaphore.process_limit = 1

    expect(semaphore.process_limit).to eq(1)
    expect(redis.call("GET", queue_key("webhooks", "process_limit"))).to eq("1")
  end

  it "removes limits set to nil" do
    semaphore.limit = 5
    semaphore.process_limit = 1

    semaphore.limit = nil
    semaphore.process_limit = nil

    expect(semaphore.limit).to be_nil
    expect(semaphore.process_limit).to be_nil
    expect(redis.call("EXISTS", queue_key("webhooks", "limit"), queue_key("webhooks", "process_limit"))).to eq(0)
  end

  it "overwrites a value that setup would have kept" do
    capsule = build_capsule(queues: %w[q], limits: {q: 2})
    setup_capsule(capsule)
    described_class.new(capsule, "q").limit = 4

    expect(redis.call("GET", queue_key("q", "limit"))).to eq("4")
  end

  it "sees limits set by other processes" do
    redis.call("SET", queue_key("webhooks", "limit"), "3")
    redis.call("SET", queue_key("webhooks", "process_limit"), "2")

    expect(semaphore.limit).to eq(3)
    expect(semaphore.process_limit).to eq(2)
  end

  it "counts busy slots globally and for its capsule" do
    other = build_capsule(queues: %w[webhooks])
    fetcher = fetcher_for(capsule)
    other_fetcher = fetcher_for(other)
    push_jobs("webhooks", 3)
    push_jobs("other", 1)
    expect([semaphore.busy, semaphore.process_busy]).to eq([0, 0])

    mine = fetcher.retrieve_work
    fetcher.retrieve_work
    other_fetcher.retrieve_work
    fetcher.retrieve_work # from "other"

    expect(semaphore.busy).to eq(3)
    expect(semaphore.process_busy).to eq(2)
    expect(described_class.new(other, "webhooks").process_busy).to eq(1)
    expect(described_class.new(capsule, "other").busy).to eq(1)

    mine.acknowledge
    flush_acks(capsule)

    expect(semaphore.busy).to eq(2)
    expect(semaphore.process_busy).to eq(1)
  end

  {"negative" => -1, "fractional" => 2.5, "non-numeric" => "abc"}.each do |kind, bad|
    it "rejects a #{kind} limit with an ArgumentError naming queue and value, keeping the old one" do
      semaphore.limit = 4
      semaphore.process_limit = 2

      expect { semaphore.limit = bad }.to raise_error(ArgumentError) { |error|
        expect(error.message).to include("webhooks").and include(bad.to_s)
      }
      expect { semaphore.process_limit = bad }.to raise_error(ArgumentError) { |error|
        expect(error.message).to include("webhooks").and include(bad.to_s)
      }
      expect(semaphore.limit).to eq(4)
      expect(semaphore.process_limit).to eq(2)
    end
  end
end
