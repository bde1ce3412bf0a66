# frozen_string_literal: true

require_relative "../../support/own_redis_server"

# An acknowledgement (UnitOfWork#acknowledge) never raises into Sidekiq's
# processor: it returns at once and rides on the next fetch. One that cannot
# reach Redis is sent again once Redis is back (here: back with the dump it
# saved as it went down), and frees its slot then, not before.
RSpec.describe Sidekiq::LimitFetch, "an acknowledgement that could not reach Redis" do
  # Persists only when told to (SHUTDOWN SAVE), into its own directory, and
  # comes back on the same port and directory with what it saved.
  let(:server) { OwnRedisServer.new.start }

  after do
    cleanup_limit_fetch # while the server still runs
    server.remove
  end

  # A command on a fresh connection: the server goes away in between.
  def own_call(*command)
    server.with_client { |conn| conn.call(*command) }
  end

  def busy_on(queue)
    own_call("LRANGE", queue_key(queue, "busy"), 0, -1)
  end

  it "raises nothing and is sent once Redis is back" do
    capsule = build_capsule(queues: %w[a b], limits: {a: 1}, redis_url: server.url)
    fetcher = fetcher_for(capsule)
    uuid = described_class.client(capsule).uuid
    own_call("LPUSH", "queue:a", job_payload("a"))
    own_call("LPUSH", "queue:b", job_payload("b"))
    unit = fetcher.retrieve_work
    still_running = fetcher.retrieve_work # a job whose slot must survive
    expect([unit.queue_name, still_running.queue_name]).to eq(%w[a b])

    server.shutdown_save
    expect { unit.acknowledge }.not_to raise_error
    sleep 0.2 # the acknowledgement's own attempt fails meanwhile

    server.start
    expect(own_call("LRANGE", in_progress_key(uuid, "a"), 0, -1)).to eq([unit.job]) # back from the dump
    wait_until(timeout: 5, message: "the acknowledgement to reach Redis") { busy_on("a").empty? }
    expect(own_call("LRANGE", in_progress_key(uuid, "a"), 0, -1)).to eq([])
    expect(busy_on("b")).to eq([uuid]) # the job still running keeps its slot
    expect(own_call("LRANGE", in_progress_key(uuid, "b"), 0, -1)).to eq([still_running.job])
    own_call("LPUSH", "queue:a", job_payload("a"))
    expect(fetcher.retrieve_work&.queue_name).to eq("a") # the slot is free again
  end
end
