# frozen_string_literal: true

require "sidekiq/limit_fetch/cli"

# A queue's adaptive limit (`limits: {queue: "1..20"}` in sidekiq.yml): read
# and checked once at boot, written with its floor as the queue's limit,
# seen through the console, and moved by real Sidekiq under load.
RSpec.describe Sidekiq::LimitFetch, "adaptive queue limits" do
  # perform(seconds): records, from inside the job, the queue's jobs running
  # now against its limit in force read after the start: a limit in force
  # that only grows (no back-off here) is never below what the fetch let
  # start.
  class self::InForceJob # rubocop:disable Lint/ConstantDefinitionInBlock
    include Sidekiq::Job

    QUEUE = "adaptq"

    sidekiq_options retry: false, queue: QUEUE

    def perform(seconds)
      LimitFetchSpec::Recorder.track(QUEUE, jid) do
        running = Sidekiq.redis { |conn| conn.call("GET", LimitFetchSpec::Recorder.running_key(QUEUE)) }.to_i
        limit = Sidekiq::LimitFetch.queue(QUEUE).limit
        Sidekiq.redis do |conn|
          conn.call("RPUSH", "limit_fetch_spec:in_force", "#{running} #{limit}")
        end
        sleep seconds
      end
    end
  end

  # perform: backs off for 0.2 s on its first run (a class that declares no
  # limit: it backs off as a class), then runs through.
  class self::BackingOffJob # rubocop:disable Lint/ConstantDefinitionInBlock
    include Sidekiq::Job

    sidekiq_options retry: false, queue: "adaptq"

    def perform
      raise Sidekiq::LimitFetch::BackOff.new(retry_after: 0.2) if LimitFetchSpec::BackOffJobs.first_run?(jid)

      LimitFetchSpec::Recorder.track("adaptq", jid) { sleep 0.01 }
    end
  end

  let(:queue) { self.class::InForceJob::QUEUE }

  def boot(limits)
    setup_capsule(build_capsule(queues: [queue], limits: limits))
  end

  it "writes its floor as the queue's limit and its range beside it, only where Redis has no limit" do
    boot(queue => "2..6")

    expect(redis.call("GET", queue_key(queue, "limit"))).to eq("2")
    expect(redis.call("GET", queue_key(queue, "limit_range"))).to eq("2..6")
    expect(described_class.queue(queue).adaptive).to eq(value: 2, floor: 2, ceiling: 6)
    expect(described_class.queue(queue).limit).to eq(2)
    line = Sidekiq::LimitFetch::BootLine.new(set_up_capsules.last.config, declared: []).to_s
    expect(line).to include("queues #{queue} (adaptive limit 2 of 2..6)")
  end

  it "writes its floor and range again after Redis lost its data" do
    client = boot(queue => "2..6")
    redis.call("FLUSHDB")
    client.beat

    expect(described_class.queue(queue).adaptive).to eq(value: 2, floor: 2, ceiling: 6)
  end

  it "reads the limit in force everywhere: the console, explain, the listing" do
    boot(queue => 1..20)
    redis.call("SET", queue_key(queue, "adaptive"), "7 1")
    q = described_class.queue(queue)

    expect([q.limit, q.adaptive]).to eq([7, {value: 7, floor: 1, ceiling: 20}])
    expect(q.explain.to_s).to eq("adaptive 7 of 1..20: empty")
    expect(q.to_h).to include(limit: 7, adaptive: {value: 7, floor: 1, ceiling: 20})
    expect(Sidekiq::LimitFetch::CLI::Table.new([q.to_h]).to_s).to include("7 (1..20)")
    expect(described_class.stats[:queues].find { _1[:queue] == queue }).to include(limit: 7)
  end

  it "gives way to a limit set at run time, kept across a boot" do
    boot(queue => "1..20")
    q = described_class.queue(queue)
    q.limit = 5

    expect([q.limit, q.adaptive]).to eq([5, nil])
    boot(queue => "1..20")
    expect([q.limit, q.adaptive]).to eq([5, nil])
    q.limit = nil
    boot(queue => "1..20")
    expect(q.adaptive).to eq(value: 1, floor: 1, ceiling: 20)
  end

  ["0..4", "5..4", "1..", "1..x", "1...4", "1..9007199254740992", 0..4, 1...4].each do |bad|
    it "refuses #{bad.inspect} at boot with an error naming the queue and the value, writing nothing" do
      expect { boot("good" => 2, queue => bad) }.to raise_error(ArgumentError) { |error|
        expect(error.message).to include(%(adaptive limit for queue "#{queue}": #{bad.inspect}), "MIN..MAX")
      }
      expect(limit_fetch_keys).to eq([])
    end
  end

  it "refuses a range as a process limit" do
    expect { setup_capsule(build_capsule(queues: [queue], process_limits: {queue => "1..4"})) }
      .to raise_error(ArgumentError, /process_limit for queue "#{queue}": "1..4"/)
  end

  it "shrinks at a back-off of one of its jobs, which runs again after it" do
    jid = self.class::BackingOffJob.perform_async
    config = build_config(queues: [queue], limits: {queue => "1..20"}, concurrency: 2)
    redis.call("SET", queue_key(queue, "adaptive"), "8 1")
    start_embedded(config)

    wait_until(timeout: 10, message: "the job run again") { done_jids(queue).include?(jid) }
    expect(described_class.queue(queue).adaptive).to eq(value: 6, floor: 1, ceiling: 20)
    expect(Sidekiq::RetrySet.new.size + Sidekiq::DeadSet.new.size).to eq(0)
  end

  it "grows above its floor under load and never runs more than its limit in force" do
    jids = Array.new(40) { self.class::InForceJob.perform_async(0.1) }
    start_embedded(build_config(queues: [queue], limits: {queue => "1..4"}, concurrency: 6))

    wait_until(timeout: 20, message: "every job") { done_jids(queue).size >= jids.size }

    seen = redis.call("LRANGE", "limit_fetch_spec:in_force", 0, -1).map { _1.split.map(&:to_i) }
    expect(seen.size).to eq(jids.size)
    expect(seen.reject { |running, limit| running <= limit }).to eq([])
    expect(seen.map(&:last).max).to be_between(2, 4)
    expect(max_running(queue)).to be_between(2, 4)
  end
end
