# frozen_string_literal: true

RSpec.describe Sidekiq::LimitFetch::UnitOfWork do
  let(:capsule) { build_capsule(queues: %w[a b], limits: {a: 2, b: 2}) }
  let(:fetcher) { fetcher_for(capsule) }
  let(:uuid) { uuid_of(capsule) }

  def jid_of(unit)
    JSON.parse(unit.job)["jid"]
  end

  it "frees exactly one slot on #acknowledge, and takes the job out of the in-progress list" do
    push_jobs("a", 3)
    first = fetcher.retrieve_work
    second = fetcher.retrieve_work
    expect(fetcher.retrieve_work).to be_nil
    expect(in_progress(uuid, "a")).to eq([second.job, first.job])

    first.acknowledge
    flush_acks(capsule)

    expect(busy_entries("a")).to eq([uuid])
    expect(in_progress(uuid, "a")).to eq([second.job])
    expect(fetcher.retrieve_work).not_to be_nil
    expect(fetcher.retrieve_work).to be_nil
  end

  # The acknowledgement rides on the capsule's next fetch: that fetch finds
  # the slot free, with no round trip of its own before it.
  it "frees the slot for the capsule's next fetch without a flush" do
    push_jobs("a", 3)
    first = fetcher.retrieve_work
    fetcher.retrieve_work

    first.acknowledge

    expect(fetcher.retrieve_work).not_to be_nil
    expect(busy_entries("a")).to eq([uuid, uuid])
    expect(in_progress(uuid, "a")).not_to include(first.job)
  end

  it "frees the slot within a few milliseconds when no fetch follows" do
    push_jobs("a", 1)
    fetcher.retrieve_work.acknowledge
    wait_until(timeout: 1, interval: 0.005, message: "the acknowledgement to reach Redis") do
      busy_entries("a").empty?
    end
    expect(in_progress(uuid, "a")).to eq([])
  end

  it "frees the slot on #requeue and puts the job back to be fetched next" do
    jids = push_jobs("a", 3)
    first = fetcher.retrieve_work
    fetcher.retrieve_work

    first.requeue

    expect(busy_entries("a")).to eq([uuid])
    expect(queue_length("a")).to eq(2)
    again = fetcher.retrieve_work
    expect(jid_of(again)).to eq(jids.first)
    expect(again.job).to eq(first.job)
  end

  it "pushes every job back and frees their slots on #bulk_requeue" do
    a_jids = push_jobs("a", 2)
    b_jids = push_jobs("b", 1)
    units = Array.new(3) { fetcher.retrieve_work }
    expect(units.map(&:queue_name)).to eq(%w[a a b])
    expect(busy_entries("a").size + busy_entries("b").size).to eq(3)

    fetcher.bulk_requeue(units)

    expect(busy_entries("a")).to eq([])
    expect(busy_entries("b")).to eq([])
    expect(queue_length("a")).to eq(2)
    expect(queue_length("b")).to eq(1)
    refetched = Array.new(3) { fetcher.retrieve_work }
    expect(refetched.map { |unit| jid_of(unit) }).to contain_exactly(*a_jids, *b_jids)
  end

  it "does nothing on #bulk_requeue with no units" do
    push_jobs("a", 1)
    held = fetcher.retrieve_work

    expect { fetcher.bulk_requeue([]) }.not_to raise_error
    expect(busy_entries("a")).to eq([uuid])
    expect(held).not_to be_nil
  end

  it "frees only its own capsule's slot" do
    other = build_capsule(queues: %w[a])
    other_fetcher = fetcher_for(other)
    push_jobs("a", 2)
    mine = fetcher.retrieve_work
    other_fetcher.retrieve_work

    mine.acknowledge
    flush_acks(capsule)

    expect(busy_entries("a")).to eq([uuid_of(other)])
  end
end
