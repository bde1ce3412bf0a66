# frozen_string_literal: true

# Fair share (fair:) with real Sidekiq: a class's slots divided among its
# tenants with work. The jobs record, from inside, how many of the class and
# of each tenant run at once.
RSpec.describe Sidekiq::LimitFetch, "fair share" do
  let(:queue) { LimitFetchSpec::FairJob::QUEUE }

  def payload_limits
    redis.call("LRANGE", "queue:#{queue}", 0, -1).map { |job| JSON.parse(job)["limit_fetch"] }
  end

  def declare(options) = Sidekiq::LimitFetch::JobLimits.new("Fair", options)

  it "carries each job's tenant first, naming its class, and its weight when not 1" do
    LimitFetchSpec::FairJob.perform_async("acme", 0)
    LimitFetchSpec::WeightedFairJob.perform_async("gold-1", 0)

    expect(payload_limits).to eq([
      [{"id" => "key:LimitFetchSpec::FairJob#acme", "fair" => "class:LimitFetchSpec::FairJob"},
       {"id" => "class:LimitFetchSpec::FairJob", "concurrency" => 4}],
      [{"id" => "key:LimitFetchSpec::WeightedFairJob#gold-1", "fair" => "class:LimitFetchSpec::WeightedFairJob",
        "weight" => 3},
       {"id" => "class:LimitFetchSpec::WeightedFairJob", "concurrency" => 5}]
    ].reverse)
  end

  it "gives a job without a tenant the class's limit alone, and a rate to each tenant" do
    no_tenant = declare(concurrency: 3, fair: ->(*) {})
    expect(no_tenant.payload("q") { [1] }).to eq([{"id" => "class:Fair", "concurrency" => 3}])
    rated = declare(concurrency: 3, fair: ->(t) { t }, rate: {limit: 5, period: 1})
    expect(rated.payload("q") { ["t"] }).to eq(
      [{"id" => "key:Fair#t", "fair" => "class:Fair", "rate" => [5, 1]}, {"id" => "class:Fair", "concurrency" => 3}]
    )
  end

  it "refuses a declaration or a weight it cannot keep, naming what was wrong" do
    {
      {concurrency: 3, fair: :tenant} => /fair must be a callable/,
      {concurrency: 3, fair: {by: ->(t) { t }, color: 1}} => /fair must be a callable, or a Hash of by: and weight:/,
      {concurrency: 3, fair: {by: ->(t) { t }, weight: 3}} => /weight: a callable/,
      {concurrency: 3, fair: ->(t) { t }, key: ->(t) { t }} => /fair must be given without key:/,
      {concurrency: 3, fair: ->(t) { t }, on_limit: :discard} => /on_limit must be :park with fair:/,
      {fair: ->(t) { t }} => /concurrency must be given/
    }.each do |options, error|
      expect { declare(options) }.to raise_error(ArgumentError, error), options.inspect
    end
    [0, -1, "3", 1001, Float::NAN].each do |weight|
      limits = declare(concurrency: 3, fair: {by: ->(t) { t }, weight: ->(*) { weight }})
      expect { limits.payload("q") { ["t"] } }
        .to raise_error(ArgumentError, /fair weight of Fair must be a number above 0 and at most 1000/), weight.inspect
    end
  end

  it "gives every slot to a tenant alone and shares them as soon as another has work" do
    jids = Array.new(160) { LimitFetchSpec::FairJob.perform_async("a", 0.05) }
    Array.new(2) { build_config(queues: [queue], concurrency: 4) }.each { |config| start_embedded(config) }
    wait_until(message: "a to hold every slot") { running("fair:a") == 4 }
    pushed = Process.clock_gettime(Process::CLOCK_REALTIME)
    jids += Array.new(16) { LimitFetchSpec::FairJob.perform_async("b", 0.05) }
    explained = wait_until(message: "a and b sharing") do
      text = Sidekiq::LimitFetch::JobLimit.for(LimitFetchSpec::FairJob, key: "b").explain
      text if text.include?("2 tenants")
    end
    expect(explained).to match(/\Atenant b: [0-4] of its fair 2\.0 of 4, 2 tenants with work\z/)
    wait_until(timeout: 30, message: "every job") do
      done_jids("class:fair").size >= jids.size
    end
    expect(Sidekiq::LimitFetch::JobLimit.for(LimitFetchSpec::FairJob, key: "b").to_h[:fair])
      .to eq(tenant: "b", running: 0, weight: nil, share: nil, of: 4, tenants: 0)

    first_b = redis.call("LRANGE", LimitFetchSpec::Recorder.starts_key("fair-b"), 0, 0).first.to_f
    expect(first_b - pushed).to be < 0.5
    expect(max_running("class:fair")).to eq(4)
    expect(max_running("fair:b")).to be_between(2, 3)
    expect(done_jids("class:fair").sort).to eq(jids.sort)
  end

  it "divides the slots by weight" do
    jids = {"gold-1" => 120, "b" => 40, "c" => 40}.flat_map do |tenant, count|
      Array.new(count) { LimitFetchSpec::WeightedFairJob.perform_async(tenant, 0.04) }
    end
    start_embedded(build_config(queues: [queue], concurrency: 8))
    samples = []
    wait_until(timeout: 30, message: "every job") do
      done = done_jids("class:weighted").size
      samples << %w[gold-1 b c].map { |t| running("weighted:#{t}") } if done.between?(20, 120)
      done >= jids.size
    end

    # Its part of the slots held: 3 of 5 for weight 3 of 5, whatever part
    # of each slot passes between one job and the next on a loaded machine.
    gold = samples.sum(&:first).fdiv(samples.sum(&:sum))
    expect(gold).to be_between(0.5, 0.7), "gold held #{(gold * 100).round}% of the slots held"
    expect(max_running("class:weighted")).to eq(5)
    expect(done_jids("class:weighted").sort).to eq(jids.sort)
  end
end
