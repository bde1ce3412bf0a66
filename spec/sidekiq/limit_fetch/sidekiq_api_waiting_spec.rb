# frozen_string_literal: true

# Jobs parked at their job limits (or behind their rates) wait as much as
# those in a queue's list: Sidekiq's own API counts them, as autoscalers
# read it (Queue#size and #latency, Stats#enqueued, #queues,
# #queue_summaries), unless :count_parked_as_waiting is false. Real
# Sidekiq's API, real Redis, jobs parked by a real capsule's fetches.
require "open3"

RSpec.describe Sidekiq::LimitFetch, "jobs parked count as waiting" do
  let(:queue) { LimitFetchSpec::KeyedJobs::QUEUE }
  let(:sidekiq_queue) { Sidekiq::Queue.new(queue) }

  # Fetches with +fetcher+ until the queue's list is empty (each fetch parks
  # up to :lookahead jobs); returns the units it took.
  def fetch_until_parked(fetcher)
    units = []
    wait_until(timeout: 20, message: -> { "the queue's list to empty (#{queue_length(queue)} left)" }) do
      unit = fetcher.retrieve_work
      units << unit if unit
      queue_length(queue).zero?
    end
    units
  end

  # +count+ jobs of one tenant, pushed at once (the first is the oldest).
  def push_tenant(count, tenant: "acme")
    Sidekiq::Client.push_bulk("class" => LimitFetchSpec::SyncJob, "args" => Array.new(count) { [tenant, 0] })
  end

  def oldest_parked_age(limit)
    payload = redis.call("LINDEX", "#{LimitFetchHelpers::KEY_PREFIX}limit:#{limit.id}:parked", -1)
    now = Process.clock_gettime(Process::CLOCK_REALTIME, :millisecond)
    (now - JSON.parse(payload).fetch("enqueued_at")) / 1000.0
  end

  it "takes Sidekiq's API classes whenever sidekiq/api is loaded, which the gem does not load itself" do
    script = 'require "sidekiq"; require "sidekiq-limit_fetch"; ' \
             'puts $LOADED_FEATURES.grep(%r{/sidekiq/api[.]rb\z}).size; require "sidekiq/api"; ' \
             "puts Sidekiq::Queue.ancestors.first, Sidekiq::Queue.singleton_class.ancestors.first, " \
             "Sidekiq::Stats.ancestors.first"
    out, err, status = Open3.capture3(Gem.ruby, "-I", File.expand_path("../../../lib", __dir__), "-e", script)
    expect(status).to be_success, err
    prepended = %w[QueueWaiting QueuesWaiting StatsWaiting].map { "Sidekiq::LimitFetch::Api::#{_1}" }
    expect(out.lines(chomp: true)).to eq(["0", *prepended])
  end

  context "with 1,000 jobs of one tenant behind a key limit of 1" do
    let(:limit) { described_class::JobLimit.for(LimitFetchSpec::SyncJob, key: "acme") }

    before do
      described_class.configuration[:lookahead] = 1000
      push_tenant(500)
      sleep 0.3 # ages well apart: the oldest parked job is of the first 500
      push_tenant(500)
      sleep 0.3
      expect(fetch_until_parked(fetcher_for(build_capsule(queues: [queue]))).size).to eq(1)
      expect(limit.parked).to eq(999)
      LimitFetchSpec::ExportJob.set(queue: queue).perform_async(0) # one job in the list, just pushed
    end

    it "counts them in Queue#size, #latency (the oldest's age), Stats#enqueued, #queues and #queue_summaries" do
      expect(sidekiq_queue.size).to eq(1000)
      expect(sidekiq_queue.latency).to be_within(0.05).of(oldest_parked_age(limit))
      expect(sidekiq_queue.latency).to be >= 0.6
      expect(sidekiq_queue.map(&:klass)).to eq(["LimitFetchSpec::ExportJob"]) # the list, as Sidekiq pages it

      stats = Sidekiq::Stats.new
      expect(stats.enqueued).to eq(1000)
      expect(stats.queues).to eq(queue => 1000)
      summary = stats.queue_summaries.find { _1.name == queue }
      expect(summary.size).to eq(1000)
      expect(summary.latency).to be_within(0.05).of(oldest_parked_age(limit))
    end

    it "gives Sidekiq's raw list lengths with :count_parked_as_waiting off" do
      described_class.configuration[:count_parked_as_waiting] = false

      expect(sidekiq_queue.size).to eq(1)
      expect(sidekiq_queue.latency).to be < 0.3
      stats = Sidekiq::Stats.new
      expect([stats.enqueued, stats.queues]).to eq([1, {queue => 1}])
      expect(stats.queue_summaries.map(&:size)).to eq([1])

      described_class.configuration[:count_parked_as_waiting] = "yes"
      expect { sidekiq_queue.size }.to raise_error(ArgumentError, /:count_parked_as_waiting must be true or false/)
    end

    it "reads the Redis Sidekiq's API reads, within Sidekiq::Client.via too" do
      other = Sidekiq::RedisConnection.create(url: RedisServer.url.sub(%r{(/\d+)?\z}, "/1"), size: 1)
      other.with { |conn| conn.call("FLUSHDB") }
      Sidekiq::Client.via(other) { LimitFetchSpec::ExportJob.set(queue: queue).perform_async(0) }

      expect(Sidekiq::Client.via(other) { [sidekiq_queue.size, Sidekiq::Stats.new.enqueued] }).to eq([1, 1])
      expect(sidekiq_queue.size).to eq(1000)
    ensure
      other&.with { |conn| conn.call("FLUSHDB") }
    end

    it "reads at most Waiting::BUDGET parked jobs whole: a longer list counts for its oldest job's queue" do
      stub_const("Sidekiq::LimitFetch::Waiting::BUDGET", 10)

      waiting = described_class::Waiting.read([queue])
      expect(waiting).to be_estimated
      expect(waiting[queue].parked).to eq(999)
      expect(sidekiq_queue.size).to eq(1000)
    end

    it "reads once for every queue of Queue.all, as the Web UI's Queues page asks each its size and latency" do
      Sidekiq::Queue.new("other").clear
      LimitFetchSpec::ExportJob.set(queue: "other").perform_async(0)
      fcalls = -> { redis.call("INFO", "commandstats")[/cmdstat_fcall:calls=(\d+)/, 1].to_i }
      before = fcalls.call

      figures = Sidekiq::Queue.all.to_h { [_1.name, [_1.size, _1.latency.positive?]] }

      expect(figures).to eq(queue => [1000, true], "other" => [1, true])
      expect(fcalls.call - before).to eq(1)
    end

    it "gives each queue's parked jobs and latency in LimitFetch.stats" do
      row = described_class.stats[:queues].find { _1[:queue] == queue }
      expect(row).to include(queued: 1, parked: 999)
      expect(row[:latency]).to be_within(0.05).of(oldest_parked_age(limit))
    end
  end

  it "counts a limit's parked jobs by their queues when they go to several" do
    described_class.configuration[:lookahead] = 1000
    Sidekiq::Client.push_bulk("class" => LimitFetchSpec::SyncJob, "args" => [["acme", 0]]) # taken first
    60.times { |i| LimitFetchSpec::SyncJob.set(queue: i % 3 == 0 ? "other" : queue).perform_async("acme", 0) }
    fetcher = fetcher_for(build_capsule(queues: [queue, "other"]))
    wait_until(message: "the lists to empty") do
      fetcher.retrieve_work
      queue_length(queue).zero? && queue_length("other").zero?
    end

    expect([sidekiq_queue.size, Sidekiq::Queue.new("other").size]).to eq([40, 20])
  end

  it "counts jobs parked behind a rate, and only those of the queue asked for" do
    limit = described_class::JobLimit.for(LimitFetchSpec::TenantRatedJob, key: "slow")
    limit.rate = {limit: 1, period: 60}
    Array.new(20) { LimitFetchSpec::TenantRatedJob.perform_async("slow", 0) }
    LimitFetchSpec::TenantRatedJob.set(queue: "elsewhere").perform_async("slow", 0)
    fetcher = fetcher_for(build_capsule(queues: [queue, "elsewhere"]))
    wait_until(message: -> { "20 jobs parked (#{limit.parked})" }) do
      fetcher.retrieve_work
      limit.parked == 20
    end

    expect([queue_length(queue), queue_length("elsewhere")]).to eq([0, 0])
    sizes = [queue, "elsewhere"].map { Sidekiq::Queue.new(_1).size }
    expect(sizes.sum).to eq(20)
    expect(Sidekiq::Stats.new.enqueued).to eq(20)
    expect(Sidekiq::Queue.new("elsewhere").latency).to be > 0
  end
end
