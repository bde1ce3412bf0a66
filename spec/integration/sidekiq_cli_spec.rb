# frozen_string_literal: true

require_relative "../support/sidekiq_app"
require_relative "../support/sidekiq_processes"

# Real `bundle exec sidekiq` processes, configured from YAML, sharing the
# test Redis. Run only these with `rspec --tag e2e`, skip them with
# `rspec --tag ~e2e`.
RSpec.describe "sidekiq-limit_fetch in sidekiq processes", :e2e do
  include SidekiqProcesses

  before(:context) { @app = SidekiqApp.new }
  after(:context) { @app&.remove }

  let(:app) { @app }

  after do |example|
    app.warn_logs if example.exception
    app.stop_all
    FileUtils.rm_f(Dir[File.join(app.dir, "log", "*.log")])
  end

  # Starts process +name+ and waits until it is running and has registered
  # its capsule; returns [process, capsule uuid].
  def start_process(name, config:, **options)
    before = registered_capsules
    process = app.spawn(name, config: config, **options)
    [process, await_registration([process], before).first]
  end

  def started_by(queue, name)
    started(queue).select { |entry| entry.start_with?("#{name}/") }
  end

  def all_busy_lists
    redis.call("KEYS", queue_key("*", "busy")).to_h { |key| [key, redis.call("LRANGE", key, 0, -1)] }
  end

  it "logs one line at boot: the version, the queues' limits in force, the job limits of the loaded classes" do
    config = app.write_config("boot", queues: %w[limited tuned paused free], limits: {"limited" => 3, "tuned" => 1},
      process_limits: {"limited" => 2}, class_limits: {"LimitFetchSpec::ExportJob" => 5, "Unloaded::ReportJob" => 4})
    Sidekiq::LimitFetch.queue("tuned").limit = 7 # set at run time: it stays, and is the one in force
    Sidekiq::LimitFetch.queue("paused").pause
    process, = start_process("boot", config: config)

    lines = process.log.lines.grep(/sidekiq-limit_fetch #{Regexp.escape(Sidekiq::LimitFetch::VERSION)}: /)
    expect(lines.size).to eq(1), process.log_tail
    expect(lines.first).to match(/INFO\b.* pid=#{process.pid} .*: sidekiq-limit_fetch /) # Sidekiq's logger
    expect(lines.first.split(": ", 2).last.chomp).to eq(
      "sidekiq-limit_fetch #{Sidekiq::LimitFetch::VERSION}: queues limited (limit 3, process limit 2), " \
      "tuned (limit 7), paused (no limit, paused), free (no limit); job limits: " \
      "LimitFetchSpec::ExportJob 5, LimitFetchSpec::RatedJob rate 3/1 s, LimitFetchSpec::SyncJob 1 per key, " \
      "LimitFetchSpec::TenantBoundJob 2 per key, rate 4/0.5 s per key, " \
      "LimitFetchSpec::TenantRatedJob rate 5/1 s per key, " \
      "LimitFetchSpec::WebhookJob 1 per key (discarded at its limit), " \
      "Unloaded::ReportJob 4 (configured; class not loaded)"
    )
    stop_process(process)
  end

  it "keeps global and process limits with several multi-threaded processes, running every job once" do
    config = app.write_config("stress", queues: %w[limited free], limits: {"limited" => 3},
      process_limits: {"limited" => 2}, concurrency: 5)
    processes = %w[p1 p2 p3].map { |name| start_process(name, config: config).first }
    expect(redis.call("GET", queue_key("limited", "limit"))).to eq("3")
    expect(redis.call("GET", queue_key("limited", "process_limit"))).to eq("2")

    jids = push_jobs("limited", 60, seconds: 0.05) + push_jobs("free", 60, seconds: 0.02)
    wait_until(timeout: 90, message: -> { "120 jobs done, #{done_jids.size} are" }) { done_jids.size >= 120 }

    expect(done_jids.sort).to eq(jids.sort)
    expect(max_running("limited")).to be_between(2, 3)
    per_process = max_running_per_worker("limited")
    expect(per_process.values).to all(be_between(1, 2)), "per process maxima: #{per_process}"
    expect(max_running("free")).to be >= 2
    wait_until(timeout: 5, message: -> { "every busy slot freed: #{all_busy_lists}" }) do
      all_busy_lists.values.all?(&:empty?)
    end

    processes.each { |process| stop_process(process) }
    expect(registered_capsules).to eq([])
    expect(redis.call("KEYS", "#{LimitFetchHelpers::KEY_PREFIX}capsule:*")).to eq([])
  end

  it "holds the slot of a job a TERMed process is still finishing, then frees it on exit" do
    config = app.write_config("drain", queues: %w[solo], limits: {"solo" => 1}, concurrency: 3, timeout: 25)
    a, a_uuid = start_process("A", config: config, heartbeat_period: 1)
    long = push_jobs("solo", 1, seconds: 40, gate: "drain")
    wait_until(message: "A to start the long job") { started_by("solo", "A").size == 1 }
    b, b_uuid = start_process("B", config: config, heartbeat_period: 1)
    short = push_jobs("solo", 1, seconds: 0.01)

    a.signal("TERM")
    # Longer than 4 heartbeat periods: a draining process that stopped its
    # heartbeat would be reaped by B in this time.
    held = holds_for?(6) { started("solo").size == 1 && a.alive? }
    expect(a).to be_alive, "A exited before its job was done; log:\n#{a.log_tail}"
    expect(held).to be(true), "B started #{started("solo")} while A was draining"
    expect(busy_entries("solo")).to eq([a_uuid])
    expect(registered_capsules).to contain_exactly(a_uuid, b_uuid)

    open_gate("drain")
    status = a.wait(20)
    expect(status).not_to be_nil, "A did not exit after its job finished; log:\n#{a.log_tail}"
    expect(status).to be_success
    wait_until(timeout: 15, message: -> { "B to run the queued job; started: #{started("solo")}" }) do
      done_jids("solo").size == 2
    end

    expect(started("solo").map(&:split).map(&:last)).to eq(long + short)
    expect(started_by("solo", "B").size).to eq(1)
    expect(done_jids("solo")).to eq(long + short)
    expect(max_running("solo")).to eq(1)
    expect(registered_capsules).to eq([b_uuid])
    stop_process(b)
  end

  it "reaps a process killed with SIGKILL: frees its slots on every queue and pushes its jobs back" do
    config_a = app.write_config("killed", queues: %w[solo a_only], limits: {"solo" => 1}, concurrency: 2)
    config_b = app.write_config("reaper", queues: %w[solo], limits: {"solo" => 1}, concurrency: 2)
    a, a_uuid = start_process("A", config: config_a, heartbeat_period: 1)
    killed_solo = push_jobs("solo", 1, seconds: 120, gate: "recovered")
    killed_a_only = push_jobs("a_only", 1, seconds: 120, gate: "never")
    wait_until(message: "A to start both jobs") do
      started_by("solo", "A").size == 1 && started_by("a_only", "A").size == 1
    end
    b, b_uuid = start_process("B", config: config_b, heartbeat_period: 1)
    after_kill = push_jobs("solo", 1, seconds: 0.01)
    expect(holds_for?(1) { started("solo").size == 1 }).to be(true), "B ran past A's slot: #{started("solo")}"

    a.signal("KILL")
    expect(a.wait(10)).not_to be_nil
    # A's heartbeat key outlives it by up to 4 periods: its slots are held
    expect(busy_entries("solo")).to eq([a_uuid])
    expect(busy_entries("a_only")).to eq([a_uuid])
    expect(in_progress(a_uuid, "a_only").map { |job| JSON.parse(job)["jid"] }).to eq(killed_a_only)

    # B reaps A, and A's job of "solo", back at the front of its queue, is
    # the one B runs next, within the limit of 1.
    wait_until(timeout: 30, message: -> { "B to reap A and run its job; #{all_busy_lists} #{registered_capsules}" }) do
      started_by("solo", "B").size == 1
    end
    expect(started_by("solo", "B").map { |entry| entry.split.last }).to eq(killed_solo)
    expect(queue_length("a_only")).to eq(1) # B does not serve it; it waits there, slot freed
    expect(busy_entries("a_only")).to eq([])
    expect(redis.call("KEYS", "#{LimitFetchHelpers::KEY_PREFIX}capsule:#{a_uuid}:*")).to eq([])
    open_gate("recovered")
    wait_until(timeout: 30, message: -> { "B to run the job pushed after the kill; done: #{done_jids("solo")}" }) do
      done_jids("solo") == killed_solo + after_kill
    end
    expect(registered_capsules).to eq([b_uuid])
    expect(redis.call("EXISTS", heartbeat_key(a_uuid))).to eq(0)
    stop_process(b)
  end

  it "applies limits changed in Redis while processes run jobs" do
    config = app.write_config("tunable", queues: %w[tunable], limits: {"tunable" => 1}, concurrency: 3)
    processes = %w[t1 t2].map { |name| start_process(name, config: config).first }
    jids = push_jobs("tunable", 60, seconds: 0.2)

    wait_until(timeout: 20, message: -> { "3 jobs done, #{done_jids.size} are" }) { done_jids.size >= 3 }
    expect(max_running("tunable")).to eq(1)

    redis.call("SET", queue_key("tunable", "limit"), "3")
    wait_until(timeout: 15, message: -> { "jobs to run in parallel, max is #{max_running("tunable")}" }) do
      max_running("tunable") > 1
    end

    redis.call("SET", queue_key("tunable", "limit"), "0")
    wait_until(timeout: 10, message: "running jobs to finish after the pause") { running("tunable").zero? }
    paused_at = started("tunable").size
    expect(holds_for?(1.5) { started("tunable").size == paused_at }).to be(true),
      "jobs started while the queue was paused with limit 0"
    expect(queue_length("tunable")).to be > 0

    redis.call("SET", queue_key("tunable", "limit"), "2")
    wait_until(timeout: 60, message: -> { "60 jobs done, #{done_jids.size} are" }) { done_jids.size >= 60 }
    expect(done_jids.sort).to eq(jids.sort)
    expect(max_running("tunable")).to be_between(2, 3)
    processes.each { |process| stop_process(process) }
  end

  # A job's own start (Recorder.stamp) follows the fetch that counted it by
  # its thread's wake-up: windows are checked with this much of it (73 ms
  # seen on a loaded 2-vCPU machine). The gem's own count, by Redis's clock,
  # is held to the rate exactly by the core's tests and bin/chaos.
  rate_slack = 0.15

  it "starts each tenant at its rate across two processes, reaching the rate, with no window over it" do
    config = app.write_config("rated", queues: [LimitFetchSpec::KeyedJobs::QUEUE], concurrency: 5)
    processes = %w[r1 r2].map { |name| start_process(name, config: config).first }
    tenants = %w[acme globex initech]
    jids = tenants.flat_map { |tenant| Array.new(20) { LimitFetchSpec::TenantRatedJob.perform_async(tenant, 0.01) } }

    labels = tenants.map { |tenant| LimitFetchSpec::KeyedJobs.key_label("rated-#{tenant}") }
    wait_until(timeout: 30, message: -> { "60 jobs done, #{done_jids.size} are" }) { done_jids.size >= 60 }
    expect(done_jids.sort).to eq(jids.sort)
    labels.each do |label|
      starts = redis.call("LRANGE", LimitFetchSpec::Recorder.starts_key(label), 0, -1).map { Float(_1) }.sort
      expect(starts.size).to eq(20)
      crowded = starts.each_cons(6).find { |window| window.last - window.first < 1.0 - rate_slack }
      expect(crowded).to be_nil, "#{label}: 6 starts within 1 s: #{crowded}"
      # 5 at once, then 5 a second: the twentieth starts 3 s after the first.
      expect(starts.last - starts.first).to be_between(3.0 - rate_slack, 3.5), "#{label}: #{starts}"
      expect(starts.last + 0.01 - starts.first).to be < 6.5
    end
    expect(%w[r1 r2].map { |name| started_by_process(labels, name) }).to all(be_positive)
    processes.each { |process| stop_process(process) }
  end

  def started_by_process(labels, name)
    labels.sum { |label| started(label).count { |entry| entry.start_with?("#{name}/") } }
  end
end
