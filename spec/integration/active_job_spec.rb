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
    # late its fetchers start (on a loaded machine, 1 s after it registered).
    tenant_jobs = %w[t1 t2].flat_map { |tenant| Array.new(4) { TenantJob.perform_later(tenant, seconds: 0.3) } }
    account_jobs = Array.new(4) { AccountJob.perform_later(account: 7, seconds: 0.3) }
    report_jobs = Array.new(8) { ReportJob.perform_later(0.3) }
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
end
