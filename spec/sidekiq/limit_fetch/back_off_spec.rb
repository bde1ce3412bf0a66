# frozen_string_literal: true

# BackOff from perform, with real Sidekiq: jobs pushed through Sidekiq's
# client, run by two embedded Sidekiq instances (two processes), each
# stamping its starts from inside; the specs hold the back-off to those.
RSpec.describe Sidekiq::LimitFetch::BackOff, "from perform" do
  let(:queue) { LimitFetchSpec::BackOffJobs::QUEUE }
  let(:tenant_job) { LimitFetchSpec::TenantCallJob }

  def starts(label)
    redis.call("LRANGE", LimitFetchSpec::Recorder.starts_key(label), 0, -1).map { Float(_1) }.sort
  end

  # The errors Sidekiq's error handlers heard, in any process.
  let(:errors) { Queue.new }

  def start_processes
    Array.new(2) { build_config(queues: [queue], concurrency: 5) }.each do |config|
      config.error_handlers << ->(error, *) { errors << error }
      start_embedded(config)
    end
  end

  def job_limit(key) = Sidekiq::LimitFetch::JobLimit.for(tenant_job, key: key)

  # Pushes a job that backs off as +how+ says, and waits until its back-off
  # holds; returns its jid and when it started.
  def back_off_first(how, label: "tenant:t1", &push)
    jid = push.call(how)
    wait_until(message: "the back-off") { starts(label).size == 1 && parked_jobs.any? }
    [jid, starts(label).first]
  end

  def parked_jobs
    redis.call("KEYS", "#{LimitFetchHelpers::KEY_PREFIX}limit:*:parked")
         .flat_map { |key| redis.call("LRANGE", key, 0, -1) }.map { JSON.parse(_1) }
  end

  def failures = Array.new(errors.size) { errors.pop }.map(&:class)

  # Until job +jid+ is in the retry set and its error heard: Sidekiq calls
  # its error handlers after it writes the retry.
  def wait_for_retry(jid)
    wait_until(message: "job #{jid} in the retry set, its error heard") do
      Sidekiq::RetrySet.new.find_job(jid) && !errors.empty?
    end
  end

  it "holds its tenant's jobs for retry_after seconds in every process, runs the others, and runs it again" do
    start_processes
    backed, started = back_off_first("seconds:1") { |how| tenant_job.perform_async("t1", how, 0.05) }
    expect(parked_jobs.map { _1["jid"] }).to eq([backed])
    expect(parked_jobs.first).not_to include("retry_count", "error_message")
    from = "BackOff from LimitFetchSpec::TenantCallJob, jid #{backed}"
    expect(job_limit("t1").explain).to match(/\Abacking off, [01]\.\d s left \(#{from}\)\z/)
    later = Array.new(6) { tenant_job.perform_async("t1", "none", 0.05) }
    others = Array.new(10) { tenant_job.perform_async("t2", "none", 0.1) }

    wait_for_done([backed, *later, *others])

    expect(starts("tenant:t1").drop(1)).to all(be >= started + 1.0)
    expect(starts("tenant:t2").min).to be < started + 0.5
    expect(Sidekiq::RetrySet.new.size + Sidekiq::DeadSet.new.size).to eq(0)
    expect(failures).to be_empty
    expect(max_running("tenant:t1")).to be <= 4
  end

  it "reads an HTTP-date Retry-After" do
    start_processes
    backed, started = back_off_first("date:2") { |how| tenant_job.perform_async("t1", how, 0.05) }
    later = Array.new(3) { tenant_job.perform_async("t1", "none", 0.05) }

    wait_for_done([backed, *later])

    # An HTTP-date counts whole seconds: 2 s ahead is 1 to 2 s ahead.
    expect(starts("tenant:t1").drop(1)).to all(be >= started + 1.0)
    expect(failures).to be_empty
  end

  it "backs off on an error its class lists in back_off_on:, with the error's Retry-After, and fails on others" do
    start_processes
    backed, started = back_off_first("listed:0.6") { |how| tenant_job.perform_async("t1", how, 0.05) }
    later = Array.new(3) { tenant_job.perform_async("t1", "none", 0.05) }
    wait_for_done([backed, *later])
    expect(starts("tenant:t1").drop(1)).to all(be >= started + 0.6)
    expect(failures).to be_empty

    failing = tenant_job.perform_async("t3", "unlisted", 0.05)

    wait_for_retry(failing)
    expect(failures).to eq([LimitFetchSpec::Unlisted])
  end

  it "backs a class that declares no limit off as a class, in its queue, and leaves the other classes alone" do
    start_processes
    backed, started = back_off_first("seconds:1", label: "plain") do |how|
      LimitFetchSpec::PlainCallJob.perform_async(how, 0.05)
    end
    later = Array.new(3) { LimitFetchSpec::PlainCallJob.perform_async("none", 0.05) }
    others = Array.new(6) { LimitFetchSpec::OtherCallJob.perform_async("none", 0.05) }

    wait_for_done([backed, *later, *others])

    expect(starts("plain").drop(1)).to all(be >= started + 1.0)
    expect(starts("other").min).to be < started + 0.5
    expect(failures).to be_empty
  end

  it "is set and ended from the console, never shortened, and lasts longer each time when no time is given" do
    limit = job_limit("t9")
    expect(limit.back_off(2)).to be_within(0.05).of(2)
    expect(limit.back_off(0.5)).to be > 1.9
    expect(limit.explain).to match(/\Abacking off, [12]\.\d s left \(from the console\)\z/)
    expect(limit.to_h[:back_off]).to include(by: "console")
    start_processes
    held = tenant_job.perform_async("t9", "none", 0.01)
    expect(holds_for?(0.5) { done_jids.empty? }).to be(true)

    expect(limit.resume).to eq(1)

    wait_for_done([held])
    expect(limit.back_off_state).to be_nil
    admin = Sidekiq::LimitFetch.admin
    request = Sidekiq::LimitFetch::BackOffRequest.new(limit: "key:x#1", carried: true, who: "console", jid: "",
      seconds: nil)
    expect([admin.back_off(request).ends_in, admin.back_off(request).ends_in]).to eq([1.0, 2.0])
  end

  it "fails and retries as Sidekiq would under another fetch (BasicFetch after a rollback): nothing is lost" do
    config = build_config(queues: [queue], concurrency: 2)
    config.error_handlers << ->(error, *) { errors << error }
    LimitFetchHelpers::SERVER_CONFIG_BLOCKS.each { |block| block.call(config) }
    config[:fetch_class] = Sidekiq::BasicFetch
    embedded_instances << Sidekiq::Embedded.new(config).tap(&:run)
    jid = tenant_job.perform_async("t1", "seconds:30", 0.01)

    wait_for_retry(jid)
    expect(failures).to eq([described_class])
  end

  it "refuses a retry_after that is not a time, naming it" do
    expect { described_class.new(retry_after: "soon") }.to raise_error(ArgumentError, /retry_after "soon"/)
    expect { described_class.new(retry_after: -1) }.to raise_error(ArgumentError, /retry_after -1 /)
    expect(described_class.new(retry_after: "Wed, 21 Oct 2015 07:28:00 GMT").retry_after).to eq(0)
    expect(described_class.new(retry_after: " 120 ").retry_after).to eq(120)
  end
end
