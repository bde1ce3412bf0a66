# frozen_string_literal: true

require_relative "../support/sidekiq_app"
require_relative "../support/sidekiq_processes"

# ActiveJob jobs of a real Rails 7.2 app (spec/fixtures/rails_app) on
# Sidekiq's adapter: pushed with perform_later from this process, which loads
# the app, and run by two `sidekiq -r <app>` processes, as Sidekiq's CLI
# boots a Rails app. The jobs record, from inside, the most of each key and
# class that ran at once.
RSpec.describe "ActiveJob jobs in a Rails app run by sidekiq processes", :e2e do
  include SidekiqProcesses

  def app_dir = File.expand_path("../fixtures/rails_app", __dir__)

  before(:context) do
    require File.join(app_dir, "config/environment")
    @log_dir = Dir.mktmpdir("limit_fetch_rails")
  end

  after(:context) { FileUtils.rm_rf(@log_dir) }

  after do |example|
    @processes&.each do |process|
      warn "---- #{process.name} (last 40 lines)\n#{process.log_tail}" if example.exception
      process.kill!
    end
  end

  def spawn(name)
    log = File.join(@log_dir, "#{name}.log")
    env = {"REDIS_URL" => RedisServer.url, "LF_TEST_PROCESS" => name}
    pid = LimitFetchTools::ChildProcess.spawn(env, "sidekiq", "-r", app_dir, "-q", "rails", "-c", "4",
      "-e", "production", log: log, chdir: @log_dir)
    SidekiqProcess.new(name, pid, log)
  end

  def limits_in_queue
    jobs = redis.call("LRANGE", "queue:rails", 0, -1).map { |job| JSON.parse(job) }
    jobs.to_h { |job| [job["args"].first["job_id"], job["limit_fetch"]] }
  end

  it "keeps each key's and the class's limit across processes, with keys from the job's own arguments" do
    # 5 may run at once, 4 in a process: the second takes a share however
    # late its fetchers start (on a loaded machine, 1 s after it registered,
    # and more: each key's 4 jobs and the class's 8 at 2 a time take 2.4 s).
    tenant_jobs = %w[t1 t2].flat_map { |tenant| Array.new(4) { TenantJob.perform_later(tenant, seconds: 0.6) } }
    account_jobs = Array.new(4) { AccountJob.perform_later(account: 7, seconds: 0.6) }
    report_jobs = Array.new(8) { ReportJob.perform_later(0.6) }
    job_ids = (tenant_jobs + account_jobs + report_jobs).map(&:job_id)

    limits = limits_in_queue
    expect(tenant_jobs.map { |job| limits[job.job_id] }).to eq(
      %w[t1 t2].flat_map { |tenant| [[{"id" => "key:TenantJob##{tenant}", "concurrency" => 1}]] * 4 }
    )
    expect(account_jobs.map { |job| limits[job.job_id] })
      .to all(eq([{"id" => "key:AccountJob#account-7", "concurrency" => 1}]))
    expect(report_jobs.map { |job| limits[job.job_id] }).to all(eq([{"id" => "class:ReportJob", "concurrency" => 2}]))

    before = registered_capsules
    @processes = %w[p1 p2].map { |name| spawn(name) }
    await_registration(@processes, before)
    wait_for_done(job_ids)

    expect(%w[key:t1 key:t2 key:account-7].map { max_running(_1) }).to eq([1, 1, 1])
    expect(max_running("class:ReportJob")).to eq(2)
    ran_in = %w[key:t1 key:t2 key:account-7 class:ReportJob].flat_map { started(_1) }.map { _1.split("/").first }
    expect(ran_in.uniq).to contain_exactly("p1", "p2")
    @processes.each { |process| stop_process(process) }
    expect(registered_capsules).to eq([])
  end

  # The app pushed by a separate `ruby` process that does not load the gem (a
  # web process whose Gemfile line says `require: false`): Sidekiq merges the
  # class's declaration into the payload, its key callable as text. Returns
  # the job ids +code+'s jobs got.
  def push_without_gem(code)
    script = <<~RUBY
      require #{File.join(app_dir, "config/environment").inspect}
      abort "sidekiq-limit_fetch is loaded" if defined?(Sidekiq::LimitFetch)
      puts JSON.generate((#{code}).map(&:job_id))
    RUBY
    env = {"REDIS_URL" => RedisServer.url, "LF_TEST_WITHOUT_GEM" => "1"}
    output, status = LimitFetchTools.unbundled { Open3.capture2e(env, "ruby", "-e", script, chdir: @log_dir) }
    expect(status).to be_success, "the process without the gem failed:\n#{output}"
    JSON.parse(output.lines.last)
  end

  def carried(set)
    redis.call("ZRANGE", set, 0, -1).map { |job| JSON.parse(job)["limit_fetch"] }
  end

  def start_process
    before = registered_capsules
    @processes = [spawn("p1")]
    await_registration(@processes, before)
    @processes.first
  end

  def expect_sets_empty
    expect(%w[schedule retry dead].to_h { [_1, redis.call("ZCARD", _1)] }).to eq("schedule" => 0, "retry" => 0,
      "dead" => 0)
    expect(redis.call("LLEN", "queue:rails")).to eq(0)
  end

  def logged(process, job_class)
    File.readlines(process.log_path).grep(/a #{job_class} job pushed again from Redis/)
  end

  it "runs once, with its class's limits, a job that a process without the gem scheduled" do
    job_ids = push_without_gem('Array.new(3) { TenantJob.set(wait: 1).perform_later("t9", seconds: 0.3) }')
    expect(carried("schedule")).to all(match("key" => start_with("#<Proc:"), "concurrency" => 1))

    process = start_process
    wait_for_done(job_ids)

    expect(started("key:t9").size).to eq(3)
    expect(max_running("key:t9")).to eq(1)
    expect_sets_empty
    expect(logged(process, "TenantJob")).to contain_exactly(include("It gets the limits TenantJob declares"))
  end

  it "runs once, with its class's limits, a job that a process without the gem pushed, through the retry set" do
    job_ids = push_without_gem('Array.new(3) { FlakyTenantJob.perform_later("t8") }')
    process = start_process
    in_retry = wait_until(timeout: 15, message: "a failed job in the retry set") do
      carried("retry").then { _1 unless _1.empty? }
    end
    expect(in_retry).to all(match("key" => start_with("#<Proc:"), "concurrency" => 1))

    wait_for_done(job_ids, timeout: 40)

    attempts = job_ids.map { |id| redis.call("GET", LimitFetchSpec::Recorder.key("attempts", id)) }
    expect(attempts).to eq(%w[2 2 2])
    expect(started("key:t8").size).to eq(3)
    expect(max_running("key:t8")).to eq(1)
    expect_sets_empty
    expect(logged(process, "FlakyTenantJob")).to contain_exactly(include("It gets the limits FlakyTenantJob declares"))
  end
end
