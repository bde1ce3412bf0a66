# frozen_string_literal: true

require "digest"

RSpec.describe Sidekiq::LimitFetch, "heartbeat and reaping" do
  before { described_class.configuration[:heartbeat_period] = 1 }

  # A capsule of some other process: registered, holding busy slots, with a
  # heartbeat key only when alive; the last to beat (within an expiry: a
  # process starting then may take its silence for death).
  def fake_capsule(uuid, alive:, busy_on:)
    redis.call("SADD", LimitFetchHelpers::CAPSULES_KEY, uuid)
    redis.call("SET", LimitFetchHelpers::KEYS::LAST_BEAT, uuid, "EX", 600)
    redis.call("SET", heartbeat_key(uuid), "1", "EX", 600) if alive
    busy_on.each do |queue, count|
      count.times { redis.call("RPUSH", queue_key(queue, "busy"), uuid) }
    end
  end

  def describe_state(*queues)
    lambda do
      busy = queues.to_h { |queue| [queue, busy_entries(queue)] }
      "capsules=#{registered_capsules.inspect} busy=#{busy.inspect}"
    end
  end

  it "frees a dead capsule's slots on every queue, also ones the reaper does not serve" do
    fake_capsule("dead-capsule", alive: false, busy_on: {"theirs" => 2, "mine" => 1})
    fake_capsule("live-capsule", alive: true, busy_on: {"theirs" => 1, "mine" => 1})
    redis.call("SADD", "queues", "theirs")
    reaper = build_capsule(queues: %w[mine], limits: {mine: 2})
    fetcher = fetcher_for(reaper)
    uuid = uuid_of(reaper)

    wait_until(timeout: 10, message: describe_state("theirs", "mine")) do
      !registered_capsules.include?("dead-capsule") && !busy_entries("theirs").include?("dead-capsule")
    end

    expect(registered_capsules).to contain_exactly(uuid, "live-capsule")
    expect(busy_entries("theirs")).to eq(["live-capsule"])
    expect(busy_entries("mine")).to eq(["live-capsule"])
    push_jobs("mine", 2)
    expect(fetcher.retrieve_work).not_to be_nil # the dead capsule's slot is free again
    expect(fetcher.retrieve_work).to be_nil # the live capsule's is not
  end

  # What a process killed while running +jobs+ of queue +queue+ leaves.
  def dead_with_jobs(uuid, queue, jobs)
    fake_capsule(uuid, alive: false, busy_on: {queue => jobs.size})
    jobs.each { |job| redis.call("LPUSH", in_progress_key(uuid, queue), job) }
    redis.call("SADD", LimitFetchHelpers::KEYS.capsule_queues(uuid), queue)
  end

  it "pushes a dead capsule's jobs back to the front of their queues as the next process starts" do
    killed = [job_payload("a"), job_payload("a")] # fetched in that order
    dead_with_jobs("killed", "a", killed)
    waiting = push_jobs("a", 1)
    capsule = build_capsule(queues: %w[a])
    setup_capsule(capsule) # beats at once: no period to wait

    wait_until(timeout: 2, message: describe_state("a")) { busy_entries("a").empty? && queue_length("a") == 3 }
    jids = redis.call("LRANGE", "queue:a", 0, -1).reverse.map { |job| JSON.parse(job)["jid"] }
    expect(jids).to eq(killed.map { |job| JSON.parse(job)["jid"] } + waiting)
    expect(redis.call("KEYS", "#{LimitFetchHelpers::KEY_PREFIX}capsule:killed:*")).to eq([])
    expect(spec_log.string)
      .to match(/INFO.*reaped dead capsule killed: freed 2 busy slots, pushed 2 in-progress jobs back/)
  end

  it "sends a job recovered more than max_recoveries times to the dead set, and logs it by jid and class" do
    described_class.configuration[:max_recoveries] = 2
    poison = job_payload("a")
    dead_with_jobs("killed-again", "a", [poison])
    redis.call("HSET", LimitFetchHelpers::KEYS::RECOVERIES, Digest::SHA1.hexdigest(poison), 2)
    setup_capsule(build_capsule(queues: %w[a]))

    wait_until(timeout: 2, message: describe_state("a")) { busy_entries("a").empty? }
    expect(redis.call("ZRANGE", "dead", 0, -1)).to eq([poison])
    expect(queue_length("a")).to eq(0)
    jid = JSON.parse(poison)["jid"]
    expect(spec_log.string).to match(
      /ERROR.*job #{jid} \(LimitFetchSpec::TrackedJob\) of queue a was in progress in dead processes more than 2 times/
    )
  end

  it "frees a dead capsule's slots on a queue no config and no Sidekiq queue list mentions" do
    fake_capsule("dead-capsule", alive: false, busy_on: {"forgotten" => 3})
    setup_capsule(build_capsule(queues: %w[mine]))

    wait_until(timeout: 10, message: describe_state("forgotten")) do
      busy_entries("forgotten").empty? && !registered_capsules.include?("dead-capsule")
    end
  end

  it "keeps live capsules registered, with their slots, across many heartbeat periods" do
    capsule = build_capsule(queues: %w[a])
    other = build_capsule(queues: %w[a])
    fetcher = fetcher_for(capsule)
    fetcher_for(other)
    push_jobs("a", 1)
    expect(fetcher.retrieve_work).not_to be_nil
    uuids = [uuid_of(capsule), uuid_of(other)]

    # the heartbeat key lives 4 periods: it must be refreshed to last 6
    alive = holds_for?(6, interval: 0.2) do
      registered_capsules == uuids.sort &&
        uuids.all? { |uuid| redis.call("EXISTS", heartbeat_key(uuid)) == 1 } &&
        busy_entries("a") == [uuid_of(capsule)]
    end
    expect(alive).to be(true), "a live capsule lost its registration or slot: #{describe_state("a").call}"
  end

  it "keeps slots freed by acknowledge, requeue and bulk_requeue free across heartbeats" do
    capsule = build_capsule(queues: %w[a b c])
    fetcher = fetcher_for(capsule)
    uuid = uuid_of(capsule)
    push_jobs("a", 2)
    push_jobs("b", 1)
    push_jobs("c", 2)
    units = Array.new(5) { fetcher.retrieve_work }
    expect(units.map(&:queue_name)).to eq(%w[a a b c c])

    units[0].acknowledge
    flush_acks(capsule)
    units[2].requeue
    fetcher.bulk_requeue(units[3, 2])
    expected = {"a" => [uuid], "b" => [], "c" => []}

    steady = holds_for?(2.5, interval: 0.1) { %w[a b c].to_h { |queue| [queue, busy_entries(queue)] } == expected }
    expect(steady).to be(true), "busy lists drifted after heartbeats: #{describe_state("a", "b", "c").call}"
  end

  it "keeps the slot of a job still running across heartbeats" do
    capsule = build_capsule(queues: %w[a])
    fetcher = fetcher_for(capsule)
    push_jobs("a", 1)
    fetcher.retrieve_work

    steady = holds_for?(2.5, interval: 0.1) { busy_entries("a") == [uuid_of(capsule)] }
    expect(steady).to be(true), "busy list drifted: #{describe_state("a").call}"
  end

  it "writes the configured limits again after Redis lost its data, keeping runtime removals otherwise" do
    capsule = build_capsule(queues: %w[a b], limits: {"a" => 2}, process_limits: {"b" => 1})
    client = setup_capsule(capsule)
    Sidekiq::LimitFetch::Global::QueueSemaphore.new(capsule, "b").process_limit = nil
    client.beat
    expect(redis.call("GET", queue_key("b", "process_limit"))).to be_nil

    redis.call("FLUSHDB")
    client.beat

    expect(redis.call("GET", queue_key("a", "limit"))).to eq("2")
    expect(redis.call("GET", queue_key("b", "process_limit"))).to eq("1")
    expect(registered_capsules).to eq([client.uuid])
  end

  it "writes the heartbeat again after Redis lost it, e.g. FLUSHDB" do
    capsule = build_capsule(queues: %w[a])
    uuid = setup_capsule(capsule).uuid
    redis.call("FLUSHDB")

    wait_until(timeout: 5, message: describe_state) do
      redis.call("EXISTS", heartbeat_key(uuid)) == 1 && registered_capsules == [uuid]
    end
  end

  describe "a limit set by hand to something other than a non-negative integer" do
    def broken_limit_warnings
      spec_log.string.lines.grep(/WARN.*not a non-negative integer/)
    end

    it "fetches nothing from the queue and is logged once per value, naming the queue, the key and the value" do
      capsule = build_capsule(queues: %w[a b])
      fetcher = fetcher_for(capsule)
      client = described_class.client(capsule)
      push_jobs("a", 3)
      limit = queue_key("a", "limit")

      redis.call("SET", limit, "abc")
      client.beat
      expect(broken_limit_warnings.size).to eq(1)
      expect(broken_limit_warnings.last).to include("limit of queue a", limit, '"abc"')
      client.beat
      expect(fetcher.retrieve_work).to be_nil
      # the heartbeat thread beats every second meanwhile: no new line
      expect(holds_for?(2.5) { broken_limit_warnings.size == 1 }).to be(true), broken_limit_warnings.join

      redis.call("SET", limit, "-1")
      client.beat
      client.beat
      expect(broken_limit_warnings.size).to eq(2)
      expect(broken_limit_warnings.last).to include("limit of queue a", limit, '"-1"')
      expect(fetcher.retrieve_work).to be_nil

      redis.call("SET", queue_key("b", "process_limit"), "2.5")
      client.beat
      expect(broken_limit_warnings.size).to eq(3)
      expect(broken_limit_warnings.last)
        .to include("process_limit of queue b", queue_key("b", "process_limit"), '"2.5"')
      expect(queue_length("a")).to eq(3)
      expect(busy_entries("a")).to eq([])

      # a valid value is not warned about, and a broken one after it is again
      redis.call("SET", limit, "2")
      client.beat
      expect(fetcher.retrieve_work&.queue_name).to eq("a")
      redis.call("SET", limit, "abc")
      client.beat
      client.beat
      expect(broken_limit_warnings.size).to eq(4)
      expect(broken_limit_warnings.last).to include(limit, '"abc"')
      expect(fetcher.retrieve_work).to be_nil
    end
  end

  describe "a queue at its global limit with jobs waiting" do
    def at_limit_lines
      spec_log.string.lines.grep(/queue webhooks (has been|is no longer) at its global limit/)
    end

    it "is warned about once after :at_limit_warning_after, and said once when it leaves that state" do
      described_class.configuration[:at_limit_warning_after] = 0.2
      capsule = build_capsule(queues: %w[webhooks], limits: {"webhooks" => 1})
      fetcher = fetcher_for(capsule)
      client = described_class.client(capsule)
      push_jobs("webhooks", 3)
      unit = fetcher.retrieve_work
      client.beat
      expect(at_limit_lines).to be_empty

      sleep 0.25
      2.times { client.beat }
      expect(at_limit_lines.size).to eq(1)
      expect(at_limit_lines.last).to match(
        %r{WARN.*queue webhooks has been at its global limit \(1/1\) with 2 jobs waiting for 0\.\d+ s \(more than 0\.2}
      )

      unit.acknowledge
      flush_acks(capsule)
      2.times { client.beat }
      expect(at_limit_lines.size).to eq(2)
      expect(at_limit_lines.last).to match(/INFO.*queue webhooks is no longer at its global limit with jobs waiting/)

      # a new episode: warned about again
      fetcher.retrieve_work
      client.beat
      sleep 0.25
      2.times { client.beat }
      expect(at_limit_lines.size).to eq(3)
      expect(at_limit_lines.last).to include("WARN", "(1/1) with 1 jobs waiting")
    end
  end
end
