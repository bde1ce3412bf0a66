# frozen_string_literal: true

require "sidekiq/limit_fetch/cli"

# A fair queue (`fair_limits: {queue: 3}` in sidekiq.yml): read and checked
# once at boot, written as the limit of the job limit queue:<name>, seen
# through the console, and shared among its jobs' tenants by real Sidekiq.
RSpec.describe Sidekiq::LimitFetch, "fair queues" do
  # perform(tenant, seconds): a job of tenant +tenant+ (its key), which
  # records from inside how many jobs of the queue run at once.
  class self::TenantJob # rubocop:disable Lint/ConstantDefinitionInBlock
    include Sidekiq::Job

    QUEUE = "fairq"

    sidekiq_options retry: false, queue: QUEUE, limit_fetch: {key: ->(tenant, *) { tenant }, concurrency: 100}

    def perform(tenant, seconds)
      LimitFetchSpec::Recorder.track(QUEUE, "#{tenant}:#{jid}") { sleep seconds }
    end
  end

  # perform(seconds): a job without a key (its class is its tenant).
  class self::PlainJob # rubocop:disable Lint/ConstantDefinitionInBlock
    include Sidekiq::Job

    sidekiq_options retry: false, queue: "fairq"

    def perform(seconds)
      LimitFetchSpec::Recorder.track("fairq", "plain:#{jid}") { sleep seconds }
    end
  end

  let(:queue) { self.class::TenantJob::QUEUE }
  let(:id) { "queue:#{queue}" }

  def config(fair, limits: nil, concurrency: 2)
    build_config(queues: [queue], limits: limits, concurrency: concurrency).tap { _1[:fair_limits] = fair }
  end

  def boot(fair, limits: nil) = setup_capsule(config(fair, limits: limits).default_capsule)

  it "writes its limit as the queue's job limit, only where Redis has none, and shows it" do
    boot({queue => 4})

    expect(redis.call("GET", "#{Sidekiq::LimitFetch::Keys::PREFIX}limit:#{id}:limit")).to eq("4")
    q = described_class.queue(queue)
    expect([q.fair_limit, q.limit, q.fair_tenants]).to eq([4, nil, []])
    expect(q.explain.to_s).to eq("fair 4, 0 tenants with work: empty")
    expect(q.to_h).to include(fair_limit: 4)
    line = Sidekiq::LimitFetch::BootLine.new(set_up_capsules.last.config, declared: []).to_s
    expect(line).to include("queues #{queue} (fair limit 4)")
    q.fair_limit = 6
    boot({queue => 4})
    expect(q.fair_limit).to eq(6)
    q.fair_limit = nil
    expect(q.fair_limit).to be_nil
  end

  it "refuses a queue that has a limit too, and a value that is not a limit, naming the queue" do
    expect { boot({queue => 3}, limits: {queue => 3}) }
      .to raise_error(ArgumentError, /queue "#{queue}" is in both :limits and :fair_limits/)
    ["1..4", -1, "x", 2.5].each do |bad|
      expect { boot({queue => bad}) }
        .to raise_error(ArgumentError, /invalid fair_limit for queue "#{queue}": #{Regexp.escape(bad.inspect)}/)
    end
    expect(limit_fetch_keys).to eq([])
  end

  it "never runs more than its limit, and starts a tenant behind another's backlog at the next turn" do
    jids = Array.new(30) { self.class::TenantJob.perform_async("a", 0.1) }
    jids += Array.new(4) { self.class::TenantJob.perform_async("b", 0.1) }
    jids += Array.new(4) { self.class::PlainJob.perform_async(0.1) }
    start_embedded(config({queue => 3}, concurrency: 6))

    explained = wait_until(timeout: 10, message: "the queue at its fair limit with tenants waiting") do
      text = described_class.queue(queue).explain.to_s
      text if text == "fair 3, 3 tenants with work: at its fair limit 3/3"
    end
    expect(explained).to be_a(String)
    wait_until(timeout: 30, message: "every job") { done_jids(queue).size >= jids.size }

    expect(max_running(queue)).to eq(3)
    order = started(queue).map { _1.split.last.split(":").first }
    expect(order.index("b")).to be < 10
    expect(order.index("plain")).to be < 10
    expect(limit_fetch_keys.grep(/:fair\z/)).to eq([])
  end
end
