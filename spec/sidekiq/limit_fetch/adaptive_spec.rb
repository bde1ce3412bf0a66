# frozen_string_literal: true

# Adaptive job limits (concurrency: 1..6) with real Sidekiq: a tenant's jobs
# call a downstream that admits 3 at once and answers 429 beyond; two
# embedded Sidekiq instances run them.
RSpec.describe Sidekiq::LimitFetch, "adaptive job limits" do
  let(:job) { LimitFetchSpec::AdaptiveCallJob }
  let(:limit) { Sidekiq::LimitFetch::JobLimit.for(job, key: "t1") }
  let(:errors) { Queue.new }

  it "carries its floor and ceiling, and starts at its floor" do
    job.perform_async("t1", 3, 0)
    payload = JSON.parse(redis.call("LRANGE", "queue:#{LimitFetchSpec::BackOffJobs::QUEUE}", 0, -1).first)

    expect(payload["limit_fetch"]).to eq([{"id" => "key:LimitFetchSpec::AdaptiveCallJob#t1", "concurrency" => 1,
                                           "ceiling" => 6}])
    expect(limit.adaptive).to eq(value: 1, floor: 1, ceiling: 6)
    expect(limit.explain).to eq("adaptive 1 of 1..6: 0 of 1 running")
  end

  it "refuses a range that is not one of limits from 1" do
    [0..3, 3..1, 1...4, 1.0..2].each do |range|
      expect { Sidekiq::LimitFetch::JobLimits.new("Bad", concurrency: range) }
        .to raise_error(ArgumentError, /concurrency must be .*a Range of them from 1/), range.inspect
    end
  end

  it "grows toward what the downstream admits and backs off past it, running every job once" do
    jids = Array.new(120) { job.perform_async("t1", 3, 0.05) }
    seen = []
    Array.new(2) { build_config(queues: [LimitFetchSpec::BackOffJobs::QUEUE], concurrency: 5) }.each do |config|
      config.error_handlers << ->(error, *) { errors << error }
      start_embedded(config)
    end

    wait_until(timeout: 30, message: "every job") do
      seen << limit.adaptive[:value]
      done_jids.size >= jids.size
    end

    expect(done_jids.sort).to eq(jids.sort)
    expect(max_running("adaptive:t1")).to be <= 3
    expect(seen.max).to be_between(3, 6)
    rejected = redis.call("GET", "adaptive:t1:429").to_i
    expect(rejected).to be_between(1, jids.size / 5)
    expect(Sidekiq::RetrySet.new.size + Sidekiq::DeadSet.new.size).to eq(0)
    expect(errors.size).to eq(0)
  end
end
