# frozen_string_literal: true

require_relative "../../support/own_redis_server"

# A release (UnitOfWork#acknowledge) that cannot reach Redis must not raise
# into Sidekiq's processor; the busy slot it could not free comes back with
# Redis (here: from the dump Redis saved as it went down) and the next
# heartbeat frees it.
RSpec.describe Sidekiq::LimitFetch, "a release that failed" do
  # Persists only when told to (SHUTDOWN SAVE), into its own directory, and
  # comes back on the same port and directory with what it saved.
  let(:server) { OwnRedisServer.new(args: ["--save", "", "--dbfilename", "dump.rdb"]).start }

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

  it "logs a warning, raises nothing, and is healed by the next heartbeat once Redis is back" do
    capsule = build_capsule(queues: %w[a b], limits: {a: 1}, redis_url: server.url)
    fetcher = fetcher_for(capsule)
    client = described_class.client(capsule)
    uuid = client.uuid
    own_call("LPUSH", "queue:a", job_payload("a"))
    own_call("LPUSH", "queue:b", job_payload("b"))
    own_call("LPUSH", "queue:b", job_payload("b"))
    unit = fetcher.retrieve_work
    still_running = fetcher.retrieve_work # a job whose slot must survive the healing
    expect([unit.queue_name, still_running.queue_name]).to eq(%w[a b])
    expect(busy_on("a")).to eq([uuid])
    expect(busy_on("b")).to eq([uuid])

    server.shutdown_save
    expect(File).to exist(File.join(server.dir, "dump.rdb"))
    expect { unit.acknowledge }.not_to raise_error
    expect(spec_log.string).to match(/WARN.*busy slot of a not freed.*next heartbeat frees it/)

    server.start
    expect(busy_on("a")).to eq([uuid]) # the slot the release could not free is back
    own_call("LPUSH", "queue:a", job_payload("a"))
    expect(client.fetch(%w[a])).to be_nil # and holds queue "a" at its limit of 1
    expect(fetcher.retrieve_work&.queue_name).to eq("b") # "a" is still full; "b" has a job

    client.beat

    expect(busy_on("a")).to eq([])
    expect(busy_on("b")).to eq([uuid, uuid]) # the jobs still running keep theirs
    expect(spec_log.string)
      .to match(/WARN.*corrected #{Regexp.escape(queue_key("a", "busy"))} for this capsule from 1 to 0 entries/)
    expect(spec_log.string).not_to match(/corrected #{Regexp.escape(queue_key("b", "busy"))}/)
    expect(fetcher.retrieve_work&.queue_name).to eq("a") # the slot is free again
  end
end
