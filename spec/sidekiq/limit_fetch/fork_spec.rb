# frozen_string_literal: true

require "json"

# A process forked after the capsule connected (a preloading server, Parallel,
# a job that forks) must open a connection of its own: a child writing to
# its parent's socket would mix up both processes' replies.
RSpec.describe Sidekiq::LimitFetch, "after fork" do
  # Ids of the connections the Rust core opened (redis-rs names itself in
  # CLIENT SETINFO), from the spec's own connection.
  def core_connection_ids(conn = redis)
    conn.call("CLIENT", "LIST").lines.filter_map do |line|
      line[/\bid=(\d+)/, 1].to_i if line.include?("lib-name=redis-rs")
    end.sort
  end

  # The core's connections once capsules of earlier examples, now garbage,
  # have closed theirs: collected now, so that the list changes only because
  # of this example.
  def settled_core_connection_ids
    GC.start
    previous = nil
    wait_until(timeout: 5, interval: 0.1, message: "the core's connections to settle") do
      ids = core_connection_ids
      settled = ids == previous
      previous = ids
      settled && ids
    end
  end

  # Runs the block in a forked child, which sends back what the block returns
  # (JSON-able) through a pipe; returns [pid, the pipe's reading end]. The
  # child leaves with exit!: no at_exit hook (RSpec's, or the suite's that
  # stops redis-server) may run there.
  def in_child(&block)
    reader, writer = IO.pipe
    pid = fork do
      reader.close
      status = 1
      begin
        writer.write(JSON.generate(block.call))
        status = 0
      rescue Exception => e # rubocop:disable Lint/RescueException
        writer.write(JSON.generate("error" => "#{e.class}: #{e.message}", "at" => e.backtrace&.first(5)))
      ensure
        writer.close
        exit!(status)
      end
    end
    writer.close
    [pid, reader]
  end

  # The child's [exit status, result]; kills it if it takes over +timeout+ s.
  def finish_child(pid, reader, timeout: 10)
    waiter = Thread.new do
      output = reader.read
      [Process.wait2(pid).last, output]
    end
    unless waiter.join(timeout)
      Process.kill("KILL", pid)
      waiter.join
      raise RSpec::Expectations::ExpectationNotMetError, "the child did not finish within #{timeout}s"
    end
    reader.close
    status, output = waiter.value
    [status, JSON.parse(output)]
  end

  it "fetches and acknowledges in the child on a connection of its own, while the parent keeps working" do
    # The child works "child" through the gem's fetcher; the parent works
    # "parent" through the same capsule's client, under a limit of 1.
    capsule = build_capsule(queues: %w[child], limits: {parent: 1})
    fetcher = fetcher_for(capsule) # sets the capsule up: its connection is open
    client = described_class.client(capsule)
    parent_jids = push_jobs("parent", 40)
    child_jids = push_jobs("child", 40)
    before_fork = settled_core_connection_ids
    expect(client.fetch(%w[nothing])).to be_nil

    pid, reader = in_child do
      fetched = Array.new(40) do |i|
        unit = fetcher.retrieve_work or raise "the child's fetch #{i + 1} found nothing"
        unit.acknowledge
        [unit.queue_name, unit.job]
      end
      client.native.flush
      connections = RedisServer.with_client { |conn| core_connection_ids(conn) }
      busy = RedisServer.with_client { |conn| conn.call("LRANGE", queue_key("child", "busy"), 0, -1) }
      {"fetched" => fetched, "connections" => connections, "busy" => busy}
    end

    parent_fetched = Array.new(40) do
      # Waits, as a processor does: on a loaded machine the acknowledgement
      # may go on its own (2 ms after it is made) and still be on its way.
      queue, job = client.fetch(%w[parent], wait: true)
      at_limit = client.fetch(%w[parent])
      client.acknowledge(queue, job)
      [queue, job, at_limit]
    end
    status, child = finish_child(pid, reader)

    expect(status).to be_success, "the child failed (#{status.inspect}): #{child.inspect}"
    expect(child["fetched"].map { |queue, job| [queue, JSON.parse(job).values_at("queue", "jid")] })
      .to eq(child_jids.map { |jid| ["child", ["child", jid]] })
    expect(child["busy"]).to eq([])
    # The child used a connection that did not exist before the fork, and
    # left the parent's open.
    expect(child["connections"] - before_fork).not_to be_empty
    expect(child["connections"]).to include(*before_fork)
    expect(parent_fetched.map { |queue, job, at_limit| [queue, JSON.parse(job).values_at("queue", "jid"), at_limit] })
      .to eq(parent_jids.map { |jid| ["parent", ["parent", jid], nil] })

    # With the child gone, the parent's calls still get their own answers.
    client.native.flush
    expect(core_connection_ids).to eq(before_fork)
    expect(busy_entries("child")).to be_empty
    expect(busy_entries("parent")).to be_empty
    jids = push_jobs("parent", 3)
    first = client.fetch(%w[parent])
    expect(client.fetch(%w[parent])).to be_nil
    expect(busy_entries("parent")).to eq([client.uuid])
    admin = described_class.admin(capsule)
    admin.set_limit("parent", :limit, 2)
    expect(admin.limit("parent", :limit)).to eq(2)
    second = client.fetch(%w[parent])
    expect([first, second].map { |queue, job| [queue, JSON.parse(job)["jid"]] })
      .to eq([["parent", jids[0]], ["parent", jids[1]]])
    expect(busy_entries("parent")).to eq([client.uuid, client.uuid])
    push_jobs("child", 1)
    expect(fetcher.retrieve_work.queue_name).to eq("child")
  end
end
