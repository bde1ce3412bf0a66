# frozen_string_literal: true

require "open3"
require_relative "../support/sidekiq_app"
require_relative "../support/sidekiq_processes"
require_relative "../support/rollback_jobs"

# Rolling back to Sidekiq's own fetch, as docs/production.md says, with real
# `sidekiq` processes: a tenant's backlog parked behind its key limit of 1,
# jobs parked behind a rate, a process killed with kill -9 while it runs
# jobs, the other stopped; `sidekiq-limits release --all` (refused while the
# killed process's heartbeat stands); then plain Sidekiq processes, which do
# not load the gem, run every job: each once to its end. The jobs the killed
# process was running when it died started twice (at least once, as any
# kill -9): exactly those, and none else.
RSpec.describe "rolling back to Sidekiq's BasicFetch", :e2e do
  include SidekiqProcesses

  before(:context) { @app = SidekiqApp.new }
  after(:context) { @app&.remove }

  let(:app) { @app }
  let(:queue) { LimitFetchSpec::RollbackJobs::QUEUE }
  let(:jobs_file) { File.expand_path("../support/rollback_jobs.rb", __dir__) }
  let(:root) { File.expand_path("../..", __dir__) }

  after do |example|
    app.warn_logs if example.exception
    app.stop_all
  end

  def start_process(name, config:, heartbeat_period:)
    before = registered_capsules
    process = app.spawn(name, config: config, heartbeat_period: heartbeat_period,
      env: {"LF_TEST_REQUIRE" => jobs_file})
    [process, await_registration([process], before).first]
  end

  # Less the line on stderr that names the Redis reached (cli_spec.rb).
  def release_all
    env = {"REDIS_URL" => RedisServer.url, "BUNDLE_GEMFILE" => File.join(root, "Gemfile")}
    stdout, stderr, status = Open3.capture3(env, "bundle", "exec", File.join(root, "exe/sidekiq-limits"),
      "release", "--all", chdir: root)
    [stdout, stderr.sub(%r{\Asidekiq-limits: Redis redis://\S+\n}, ""), status.exitstatus]
  end

  def jid_of(entry) = entry.split.last

  # The command docs/production.md gives to delete the gem's keys.
  def purge_command
    commands = File.read(File.join(root, "docs/production.md")).lines.grep(/\Aredis-cli .*sidekiq:limit_fetch:\*/)
    expect(commands.size).to eq(1), "one purge command in docs/production.md: #{commands}"
    commands.first
  end

  def parked(id) = Sidekiq::LimitFetch::JobLimit.new(id).parked

  it "puts every parked and stranded job back in its queue, and plain processes run each once" do
    # The plain processes read it too: Sidekiq ignores its limits.
    config = app.write_config("fleet", queues: [queue], limits: {queue => 50}, concurrency: 3, timeout: 5)
    # Its heartbeat outlives it 8 s (4 periods): the other process, stopped
    # at once, is gone long before it could reap it.
    killed, killed_uuid = start_process("killed", config: config, heartbeat_period: 2)
    backlog = Array.new(6) { LimitFetchSpec::TenantGatedJob.perform_async("acme", "rolled-back") }
    other = LimitFetchSpec::TenantGatedJob.perform_async("globex", "rolled-back")
    rated = Array.new(5) { |n| LimitFetchSpec::SlowRatedJob.perform_async(n) }
    all = backlog + [other] + rated
    acme = "key:LimitFetchSpec::TenantGatedJob#acme"
    rate = "class:LimitFetchSpec::SlowRatedJob"
    state = -> { "started #{started(queue)}, parked #{parked(acme)} and #{parked(rate)}" }
    wait_until(timeout: 15, message: -> { "acme's and globex's first jobs running, the rest parked: #{state.call}" }) do
      running(LimitFetchSpec::RollbackJobs::LABEL) == 2 && done_jids == [rated.first] &&
        parked(acme) == 5 && parked(rate) == 4
    end
    # The rest of the fleet: nothing it may fetch.
    stopped, = start_process("stopped", config: config, heartbeat_period: 1)
    held = in_progress(killed_uuid, queue).map { |job| JSON.parse(job)["jid"] }
    expect(held).to contain_exactly(backlog.first, other)

    killed.signal("KILL")
    expect(killed.wait(10)).not_to be_nil
    stop_process(stopped)

    # The killed process's heartbeat stands a while (4 periods): refused.
    out, err, status = release_all
    expect([out, status]).to eq(["", 1])
    expect(err).to start_with("sidekiq-limits: release refused: 1 live capsule (registered and beating) in 1 process: ")
    expect(err).to match(/ \S+:#{killed.pid}:\S+ \(heartbeat expires in \d+ s\); stop them first/)
    expect(parked(acme)).to eq(5)

    wait_until(timeout: 15, message: "the killed process's heartbeat to expire") do
      redis.call("EXISTS", heartbeat_key(killed_uuid)) == 0
    end
    out, err, status = release_all
    expect([err, status]).to eq(["", 0])
    expect(out).to eq(<<~TEXT)
      released 11 jobs to the front of their queues:
        #{queue}: 9 parked, 2 from capsules not alive
      1 capsule that was not alive reaped
    TEXT
    # Every job not yet run is in Sidekiq's own list: none is left in the
    # gem's keys.
    queued = redis.call("LRANGE", "queue:#{queue}", 0, -1).map { |job| JSON.parse(job)["jid"] }
    expect(queued).to match_array(all - [rated.first])
    expect(redis.call("KEYS", "sidekiq:limit_fetch:*parked*")).to eq([])
    expect(redis.call("KEYS", "sidekiq:limit_fetch:capsule:*")).to eq([])

    # The app without the gem: plain Sidekiq processes on the same Redis.
    open_gate("rolled-back")
    plain = %w[plain1 plain2].map do |name|
      app.spawn(name, config: config, require: File.expand_path("../support/plain_sidekiq.rb", __dir__))
    end
    # Each booted (its signals trapped), whichever runs the jobs.
    wait_until(timeout: 30, message: -> { "the plain processes to start: #{plain.map(&:log_tail)}" }) do
      plain.all? { |process| process.log.include?("plain sidekiq: limit_fetch loaded: false") }
    end
    wait_until(timeout: 30, message: -> { "#{all.size} jobs done, #{done_jids.size} are" }) do
      done_jids.size >= all.size
    end
    plain.each { |process| stop_process(process) }

    expect(done_jids.tally.values.uniq).to eq([1])
    expect(done_jids).to match_array(all)
    starts = started(LimitFetchSpec::RollbackJobs::LABEL).map { |entry| jid_of(entry) }.tally
    expect(starts.select { |_, n| n > 1 }.keys).to match_array(held), "started twice: only what the killed one ran"
    expect(starts.values.max).to eq(2)
    expect(registered_capsules).to eq([])

    # What is left holds no job; the documented command deletes it.
    expect(redis.call("KEYS", "sidekiq:limit_fetch:*")).not_to be_empty
    _, err, status = Open3.capture3({"REDIS_URL" => RedisServer.url}, "bash", "-c", purge_command)
    expect([err, status.exitstatus]).to eq(["", 0])
    expect(redis.call("KEYS", "sidekiq:limit_fetch:*")).to eq([])
    expect(redis.call("LLEN", "queue:#{queue}")).to eq(0)
  end
end
