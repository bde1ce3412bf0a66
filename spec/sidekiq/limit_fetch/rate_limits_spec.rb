# frozen_string_literal: true

# Rates (starts per period) with real Sidekiq: jobs pushed through Sidekiq's
# client, run by embedded Sidekiq instances. The jobs record, from inside,
# when each started (Recorder.stamp) and how many ran at once. A job's own
# start follows the fetch that counted it by its thread's wake-up: windows
# are checked with SLACK of it (a CI run under load saw two of a window's
# starts 30 ms after its first; a rate not held starts a backlog at once).
RSpec.describe Sidekiq::LimitFetch, "rates" do
  let(:queue) { LimitFetchSpec::KeyedJobs::QUEUE }

  slack = 0.1

  def stamps(label)
    redis.call("LRANGE", LimitFetchSpec::Recorder.starts_key(label), 0, -1).map { Float(_1) }.sort
  end

  # The first start time at which more than +limit+ starts fall within
  # +period+ (less +slack+), or nil.
  define_method(:crowded_window) do |starts, limit, period|
    starts.each_cons(limit + 1).find { |window| window.last - window.first < period - slack }&.first
  end

  def payloads
    redis.call("LRANGE", "queue:#{queue}", 0, -1).reverse.map { |job| JSON.parse(job) }
  end

  it "carries the rate in each job's limits, of the class or of the key" do
    LimitFetchSpec::RatedJob.perform_async(0)
    LimitFetchSpec::TenantRatedJob.perform_async("acme", 0)
    LimitFetchSpec::TenantBoundJob.perform_async("acme", 0)

    expect(payloads.map { |job| job["limit_fetch"] }).to eq([
                                                              [{"id" => "class:LimitFetchSpec::RatedJob",
                                                                "rate" => [3, 1]}],
                                                              [{"id" => "key:LimitFetchSpec::TenantRatedJob#acme",
                                                                "rate" => [5, 1]}],
                                                              [{"id" => "key:LimitFetchSpec::TenantBoundJob#acme",
                                                                "concurrency" => 2, "rate" => [4, 0.5]}]
                                                            ])
  end

  it "starts a class at its rate while the jobs queued behind it run at once" do
    label = LimitFetchSpec::KeyedJobs.class_label(LimitFetchSpec::RatedJob)
    Array.new(15) { LimitFetchSpec::RatedJob.perform_async(0.01) }
    Array.new(5) { LimitFetchSpec::TrackedJob.set(queue: queue).perform_async("unlimited", 0.01) }
    began = monotonic_now
    start_embedded(build_config(queues: [queue], concurrency: 5))

    wait_until(message: "the unlimited jobs done") { done_jids("unlimited").size == 5 }
    expect(monotonic_now - began).to be < 1.0
    wait_until(timeout: 15, message: -> { "15 rated jobs done, #{done_jids(label).size} are" }) do
      done_jids(label).size == 15
    end
    starts = stamps(label)
    expect(starts.size).to eq(15)
    expect(crowded_window(starts, 3, 1.0)).to be_nil, "more than 3 starts within 1 s: #{starts}"
    # 3 a second, from the first: the last of 15 starts about 4 s in.
    expect(starts.last - starts.first).to be_between(4.0 - slack, 5.0)
  end

  it "holds a rate and a concurrency limit on the same key, each tenant on its own" do
    %w[a b].each { |tenant| Array.new(10) { LimitFetchSpec::TenantBoundJob.perform_async(tenant, 0.3) } }
    start_embedded(build_config(queues: [queue], concurrency: 6))

    labels = %w[a b].map { |tenant| LimitFetchSpec::KeyedJobs.key_label("bound-#{tenant}") }
    wait_until(timeout: 20, message: "20 jobs done") { labels.sum { |label| done_jids(label).size } == 20 }
    labels.each do |label|
      starts = stamps(label)
      expect(max_running(label)).to eq(2)
      expect(crowded_window(starts, 4, 0.5)).to be_nil, "more than 4 starts within 0.5 s: #{starts}"
    end
  end

  describe "bad declarations" do
    def job_class(options)
      klass = stub_const("BadRateJob", Class.new { include Sidekiq::Job })
      klass.sidekiq_options limit_fetch: options
      klass
    end

    [
      {limit: 0, period: 1}, {limit: -5, period: 1}, {limit: 2.5, period: 1}, {limit: 5}, {period: 1},
      {limit: 5, period: 0}, {limit: 5, period: -1}, {limit: 5, period: 0.01}, {limit: 5, period: "1"},
      {limit: 5, period: 1, burst: 3}, "5/1", 5
    ].each do |bad|
      it "raises at push, naming the class, for rate: #{bad.inspect}, and pushes nothing" do
        expect { job_class(rate: bad).perform_async }
          .to raise_error(ArgumentError, /BadRateJob's limit_fetch rate must be \{limit: a positive Integer/)
        expect(queue_length("default")).to eq(0)
      end
    end

    it "raises at push for an unknown option beside rate:, and pushes nothing" do
      expect { job_class(rate: {limit: 1, period: 1}, rates: 2).perform_async }
        .to raise_error(ArgumentError, /BadRateJob.*\[:rates\]/)
      expect(queue_length("default")).to eq(0)
    end
  end

  describe "at run time" do
    it "reads and changes a key's rate, and parked jobs it lets start go at once" do
      limit = described_class::JobLimit.for(LimitFetchSpec::TenantRatedJob, key: "slow")
      expect(limit.rate).to eq(described_class::Rate.new(limit: 5, period: 1))
      limit.rate = {limit: 1, period: 60}
      jids = Array.new(3) { LimitFetchSpec::TenantRatedJob.perform_async("slow", 0) }
      start_embedded(build_config(queues: [queue], concurrency: 2))
      wait_until(message: "2 jobs parked") { limit.parked == 2 }
      expect(limit.rate.to_s).to eq("1/60")
      expect(limit.rate_window.to_h).to include(starts: 1)
      expect(limit.rate_window.next_start_in).to be_between(55, 60)

      limit.reset_rate

      label = LimitFetchSpec::KeyedJobs.key_label("rated-slow")
      wait_until(message: "3 jobs done") { done_jids(label).size == 3 }
      expect(done_jids(label).sort).to eq(jids.sort)
      expect(limit.rate.to_s).to eq("5/1")
    end

    it "reads, changes and explains a queue's rate" do
      q = described_class.queue("rated-queue")
      expect(q.rate).to be_nil
      q.rate = "2/60"
      expect(q.rate).to eq(described_class::Rate.new(limit: 2, period: 60))
      expect { q.rate = {limit: 0, period: 1} }.to raise_error(ArgumentError, /rate for queue "rated-queue"/)
      jids = Array.new(3) { LimitFetchSpec::TrackedJob.set(queue: "rated-queue").perform_async("rated-queue", 0) }
      start_embedded(build_config(queues: ["rated-queue"], concurrency: 2))
      wait_until(message: "2 jobs done") { done_jids("rated-queue").size == 2 }

      explanation = q.explain
      expect(explanation.reason).to eq(:at_rate)
      expect(explanation.to_s).to match(%r{\Aat its rate 2/60 s, next start in (59|60)\.\d s\z})
      expect(q.queued).to eq(1)
      q.rate = nil
      wait_for_done(jids)
    end

    it "writes a queue's configured rate only where Redis has none, and refuses a bad one naming the queue" do
      described_class.queue("b").rate = "7/1"
      capsule = build_capsule(queues: %w[a b])
      capsule.config[:rates] = {"a" => {limit: 3, period: 0.5}, :b => "1/1"}
      setup_capsule(capsule)

      expect(redis.call("GET", queue_key("a", "rate"))).to eq("3/0.5")
      expect(redis.call("GET", queue_key("b", "rate"))).to eq("7/1")
      bad = build_capsule(queues: %w[c])
      bad.config[:rates] = {"c" => {limit: 3}}
      expect { setup_capsule(bad) }.to raise_error(ArgumentError, /rate for queue "c": \{:limit=>3\}/)
    end
  end
end
