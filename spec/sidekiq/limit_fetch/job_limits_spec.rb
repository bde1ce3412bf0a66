# frozen_string_literal: true

# Job limits (a class's, a key's) with real Sidekiq: jobs pushed through
# Sidekiq's client (the middleware computes what they carry), run by embedded
# Sidekiq instances, each Sidekiq::Config standing for one process. The jobs
# record, from inside, the most of each class and key that ran at once.
RSpec.describe Sidekiq::LimitFetch, "job limits" do
  let(:queue) { LimitFetchSpec::KeyedJobs::QUEUE }
  let(:export_label) { LimitFetchSpec::KeyedJobs.class_label(LimitFetchSpec::ExportJob) }

  def key_label(key) = LimitFetchSpec::KeyedJobs.key_label(key)

  def payloads
    redis.call("LRANGE", "queue:#{queue}", 0, -1).map { |job| JSON.parse(job) }
  end

  def job_limit_keys
    redis.call("KEYS", "#{LimitFetchHelpers::KEY_PREFIX}limit:*")
  end

  it "carries each job's limits in its payload, computed at push, first, where the fetch reads them alone" do
    LimitFetchSpec::ExportJob.perform_async(0)
    LimitFetchSpec::SyncJob.perform_async("tenant ünï", 0)

    expect(payloads.map { |job| job["limit_fetch"] }).to contain_exactly(
      [{"id" => "class:LimitFetchSpec::ExportJob", "concurrency" => 2}],
      [{"id" => "key:LimitFetchSpec::SyncJob#tenant ünï", "concurrency" => 1}]
    )
    expect(redis.call("LRANGE", "queue:#{queue}", 0, -1)).to all(start_with('{"limit_fetch":['))
  end

  it "keeps a class limit and each key's limit across processes, and leaves nothing behind" do
    jids = Array.new(16) { LimitFetchSpec::ExportJob.perform_async(0.05) }
    tenants = %w[a b c d]
    jids += tenants.flat_map { |tenant| Array.new(6) { LimitFetchSpec::SyncJob.perform_async(tenant, 0.05) } }
    Array.new(3) { build_config(queues: [queue], concurrency: 4) }.each { |config| start_embedded(config) }

    wait_for_done(jids)

    expect(max_running(export_label)).to eq(2)
    expect(tenants.map { |tenant| max_running(key_label(tenant)) }).to all(eq(1))
    wait_until(message: "the job limits' keys to go") { job_limit_keys.empty? }
  end

  it "raises one tenant's limit at run time while its jobs run, and holds the others to the default" do
    slow = Array.new(12) { LimitFetchSpec::SyncJob.perform_async("premium", 0.15) }
    others = Array.new(4) { LimitFetchSpec::SyncJob.perform_async("basic", 0.05) }
    start_embedded(build_config(queues: [queue], concurrency: 6))
    premium = described_class::JobLimit.for(LimitFetchSpec::SyncJob, key: "premium")
    wait_until(message: "premium jobs to be parked") { premium.parked.positive? }
    expect(premium.limit).to eq(1)

    premium.limit = 3

    wait_for_done(slow + others)
    expect(max_running(key_label("premium"))).to eq(3)
    expect(max_running(key_label("basic"))).to eq(1)
    # The last job records itself done before Sidekiq acknowledges it and
    # frees its slot: a slot that leaked would never free.
    wait_until(message: "the last premium slot to be freed") { premium.running.zero? }
    expect(premium.to_h).to include(limit: 3, stored: 3, running: 0, parked: 0)
    premium.reset
    expect([premium.stored, premium.limit]).to eq([nil, 1])
  end

  it "discards a duplicate for an ID that is running, logs and counts it, and runs a later one" do
    start_embedded(build_config(queues: [queue], concurrency: 3))
    first = LimitFetchSpec::WebhookJob.perform_async(7, "first")
    wait_until(message: "the first webhook to run") { running(key_label("webhook-7")) == 1 }
    duplicate = LimitFetchSpec::WebhookJob.perform_async(7, "never")
    wait_until(message: "the duplicate to be discarded") { spec_log.string.include?(duplicate) }

    open_gate("first")
    wait_for_done([first])
    # The job records itself done before Sidekiq acknowledges it: a job
    # pushed in between would find the key still held, and be discarded.
    webhook = described_class::JobLimit.for(LimitFetchSpec::WebhookJob, key: 7)
    wait_until(message: "the first webhook's slot to be freed") { webhook.running.zero? }
    later = LimitFetchSpec::WebhookJob.perform_async(7, "later")
    open_gate("later")

    wait_for_done([first, later])
    expect(spec_log.string).to include("discarded LimitFetchSpec::WebhookJob #{duplicate}: " \
                                       "key:LimitFetchSpec::WebhookJob#7 was at its limit")
    expect(redis.call("HGET", LimitFetchHelpers::KEYS::DISCARDED, "LimitFetchSpec::WebhookJob")).to eq("1")
  end

  it "lists the job limits with running or parked jobs, and writes class_limits where Redis has none" do
    config = build_config(queues: [queue], concurrency: 2)
    config[:class_limits] = {"LimitFetchSpec::ExportJob" => 1}
    export = described_class::JobLimit.for(LimitFetchSpec::ExportJob)
    jids = Array.new(3) { LimitFetchSpec::ExportJob.perform_async(0.3) }
    start_embedded(config)

    wait_until(message: "an export to run and two to be parked") { export.running == 1 && export.parked == 2 }
    expect(described_class::JobLimit.active.map(&:id)).to eq(["class:LimitFetchSpec::ExportJob"])
    expect(export.to_h).to eq(id: export.id, limit: 1, stored: 1, running: 1, parked: 2, rate: nil, stored_rate: nil,
      back_off: nil, adaptive: nil)
    wait_for_done(jids)
    expect(max_running(export_label)).to eq(1)
    # A job records itself done before Sidekiq acknowledges it and frees its slot.
    wait_until(message: "the last export's slot to be freed") { described_class::JobLimit.active.empty? }
    expect(export.to_h).to include(running: 0, parked: 0)
  end

  describe "bad declarations and keys" do
    def job_class(options)
      klass = stub_const("BadJob", Class.new { include Sidekiq::Job })
      klass.sidekiq_options limit_fetch: options
      klass
    end

    it "makes the push raise, naming the class, when the key callable raises" do
      klass = job_class(key: ->(id) { id }, concurrency: 1)

      expect { klass.perform_async(1, 2) }
        .to raise_error(ArgumentError, /the key of BadJob raised ArgumentError: wrong number of arguments/)
      expect(queue_length("default")).to eq(0)
    end

    it "refuses a key over 1024 bytes, or of another type, and takes any text" do
      klass = job_class(key: ->(key) { key })

      expect { klass.perform_async("k" * 10_240) }.to raise_error(ArgumentError, /BadJob.*at most 1024 bytes/)
      expect { klass.perform_async([1]) }.to raise_error(ArgumentError, /BadJob.*a String, Symbol, Integer or nil/)
      klass.perform_async("ключ #1 ✓")
      expect(payloads_of("default").last["limit_fetch"])
        .to eq([{"id" => "key:BadJob#ключ #1 ✓", "concurrency" => 1}])
    end

    it "puts no key limit on a job whose key is nil" do
      job_class(key: ->(_) {}).perform_async(nil)

      expect(payloads_of("default").last).not_to have_key("limit_fetch")
    end

    it "refuses an unknown option or a bad value, naming the class and the option" do
      expect { job_class(concurency: 2).perform_async }.to raise_error(ArgumentError, /BadJob.*\[:concurency\]/)
      expect { job_class(concurrency: -1).perform_async }.to raise_error(ArgumentError, /BadJob.*concurrency/)
      expect { job_class({}).perform_async }.to raise_error(ArgumentError, /BadJob.*concurrency must be given/)
      expect { job_class(concurrency: -> { "2" }).perform_async }
        .to raise_error(ArgumentError, /BadJob's limit_fetch concurrency must be an Integer.*got "2"/)
      expect { job_class(concurrency: 1, on_limit: :wait).perform_async }
        .to raise_error(ArgumentError, /BadJob.*on_limit/)
      expect { job_class(concurrency: 1, group: "x").perform_async }.to raise_error(ArgumentError, /group.*key:/)
      expect { job_class(key: ->(k) { k }, group: "a#b").perform_async(1) }.to raise_error(ArgumentError, /group/)
      expect(queue_length("default")).to eq(0)
    end

    def payloads_of(queue)
      redis.call("LRANGE", "queue:#{queue}", 0, -1).reverse.map { |job| JSON.parse(job) }
    end
  end

  # Jobs a process without the gem pushed (Sidekiq merged the class's
  # declaration into them, callables as text), pushed again by Sidekiq's own
  # scheduler (Sidekiq::Scheduled::Enq, which moves the schedule and retry
  # sets) in a process with the gem.
  describe "jobs pushed by a process without the gem, pushed again by Sidekiq's scheduler" do
    let(:config) do
      build_config.tap { |config| LimitFetchHelpers::SERVER_CONFIG_BLOCKS.each { |block| block.call(config) } }
    end

    # A class of its own per example: each class is logged once per process.
    def job_class(options)
      klass = stub_const("RepushedJob#{SecureRandom.hex(4).upcase}", Class.new { include Sidekiq::Job })
      klass.sidekiq_options limit_fetch: options unless options.nil?
      klass
    end

    # Sidekiq's own client with no middleware: what a process that does not
    # load the gem pushes.
    def push_without_gem(item)
      Sidekiq::Client.new(config: config, chain: Sidekiq::Middleware::Chain.new).push(item)
    end

    def schedule(job_class, *args, **extra)
      push_without_gem({"class" => job_class, "args" => args, "at" => Time.now.to_f - 1}.merge(extra))
    end

    def enqueue_due_jobs
      Sidekiq::Scheduled::Enq.new(config).enqueue_jobs
    end

    def limits_by_jid
      redis.call("LRANGE", "queue:default", 0, -1).to_h { |job| JSON.parse(job).values_at("jid", "limit_fetch") }
    end

    def logged(job_class)
      spec_log.string.lines.grep(/a #{job_class} job pushed again from Redis/)
    end

    it "gives a scheduled job the limits its class declares here, and logs that once per class" do
      tenant = job_class(key: ->(tenant, *) { tenant }, concurrency: 1)
      export = job_class(concurrency: 2)
      tenant_jids = Array.new(2) { schedule(tenant, "t1", 0) }
      export_jid = schedule(export, 0)
      carried = redis.call("ZRANGE", "schedule", 0, -1).map { JSON.parse(_1)["limit_fetch"] }
      expect(carried).to include({"key" => start_with("#<Proc:"), "concurrency" => 1})

      enqueue_due_jobs

      expect(redis.call("ZCARD", "schedule")).to eq(0)
      expect(limits_by_jid).to eq(
        tenant_jids.to_h { [_1, [{"id" => "key:#{tenant}#t1", "concurrency" => 1}]] }
          .merge(export_jid => [{"id" => "class:#{export}", "concurrency" => 2}])
      )
      expect(logged(tenant)).to contain_exactly(include("It gets the limits #{tenant} declares in this process"))
      expect(logged(export).size).to eq(1)
    end

    it "gives a job from the retry set the limits its class declares here" do
      tenant = job_class(key: ->(tenant, *) { tenant }, concurrency: 1)
      jid = push_without_gem("class" => tenant, "args" => ["t2"])
      # As Sidekiq's JobRetry writes a failed job (the gem's fetch ran it
      # without limits: a Hash is none).
      failed = JSON.parse(redis.call("RPOP", "queue:default"))
      failed.merge!("retry_count" => 0, "failed_at" => 1, "error_class" => "RuntimeError", "error_message" => "boom")
      redis.call("ZADD", "retry", (Time.now.to_f - 1).to_s, JSON.generate(failed))

      enqueue_due_jobs

      expect(redis.call("ZCARD", "retry")).to eq(0)
      expect(limits_by_jid).to eq(jid => [{"id" => "key:#{tenant}#t2", "concurrency" => 1}])
    end

    it "works its limits out inside Sidekiq's reloader (Rails's executor in a Rails server), as a job runs" do
      inside = false
      config[:reloader] = proc do |&block|
        inside = true
        block.call
      ensure
        inside = false
      end
      key_inside = nil
      tenant = job_class(key: lambda { |tenant, *|
        key_inside = inside
        tenant
      })
      schedule(tenant, "t3", 0)

      enqueue_due_jobs

      expect(key_inside).to be(true)
      expect(limits_by_jid.values).to eq([[{"id" => "key:#{tenant}#t3", "concurrency" => 1}]])
    end

    it "never refuses a job: limits from what it carries when its class is not defined here, else none" do
      gone = "Gone#{SecureRandom.hex(4).upcase}"
      class_only = schedule("#{gone}::ExportJob", 0, "limit_fetch" => {"concurrency" => 2})
      keyed = schedule("#{gone}::SyncJob", 0, "limit_fetch" => {"key" => "#<Proc:0x0 (lambda)>", "concurrency" => 1})
      raising = schedule(job_class(key: ->(id) { id }), 1, 2)
      undeclared = schedule(job_class(nil), 0, "limit_fetch" => {"concurrency" => 1})

      enqueue_due_jobs

      expect(redis.call("ZCARD", "schedule")).to eq(0)
      expect(limits_by_jid).to eq(
        class_only => [{"id" => "class:#{gone}::ExportJob", "concurrency" => 2}],
        keyed => nil, raising => nil, undeclared => nil
      )
      expect(logged("#{gone}::ExportJob")).to contain_exactly(include("is not defined in this process"))
      expect(logged("#{gone}::SyncJob"))
        .to contain_exactly(include("runs without job limits (ArgumentError: sidekiq-limit_fetch: " \
                                    "#{gone}::SyncJob's limit_fetch key must be a callable"))
      expect(spec_log.string).to include("the key of RepushedJob").and include("declares no limit_fetch option")
    end
  end
end
