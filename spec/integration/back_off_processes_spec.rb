# frozen_string_literal: true

require_relative "../support/sidekiq_app"
require_relative "../support/sidekiq_processes"
require_relative "../support/back_off_process_jobs"

# BackOff between real `sidekiq` processes: one tenant's job backs off for
# 2 s; no job of that tenant starts in any process for 2 s, the other
# tenants' jobs start throughout, and the job runs again after 2 s with no
# retry_count, each job's runs recorded from inside (a server middleware).
RSpec.describe "BackOff across sidekiq processes", :e2e do
  include SidekiqProcesses

  before(:context) { @app = SidekiqApp.new }

  after(:context) { @app&.remove }

  let(:app) { @app }
  let(:jobs_file) { File.expand_path("../support/back_off_process_jobs.rb", __dir__) }
  let(:job) { BackOffProcessJobs::TenantJob }

  after do |example|
    app.warn_logs if example.exception
    app.stop_all
  end

  def start_processes
    config = app.write_config("back_off_e2e", queues: [BackOffProcessJobs::QUEUE], concurrency: 5, timeout: 5)
    before = registered_capsules
    processes = Array.new(2) { app.spawn("p#{_1 + 1}", config:, env: {"LF_TEST_REQUIRE" => jobs_file}) }
    await_registration(processes, before)
  end

  # [[time, jid, retry_count], ...] of +tenant+'s runs, by time.
  def starts(tenant)
    redis.call("LRANGE", BackOffProcessJobs.starts_key(tenant), 0, -1)
         .map do |line|
      time, jid, count = line.split
      [Float(time), jid, count]
    end.sort
  end

  def done = redis.call("HGETALL", "back_off_e2e:done")

  {"seconds:2" => 2.0, "date:3" => 2.0, "listed:2" => 2.0}.each do |how, at_least|
    it "holds the tenant #{at_least} s in every process after a back-off (#{how.split(":").first}), not the others" do
      start_processes
      backed = job.perform_async("a", how, 0.05)
      wait_until(message: "the back-off") { starts("a").size == 1 && redis.call("KEYS", "*back_off").any? }
      started = starts("a").first.first
      later = Array.new(10) { job.perform_async("a", "none", 0.05) }
      others = Array.new(40) { job.perform_async("b", "none", 0.1) }

      wait_until(timeout: 20, message: -> { "every job (#{done.size} done)" }) { done.size == 51 }

      a_runs = starts("a")
      expect(a_runs.drop(1).map(&:first)).to all(be >= started + at_least)
      expect(a_runs.count { _2 == backed }).to eq(2)
      expect(a_runs.map(&:last).uniq).to eq(["-"])
      b_times = starts("b").map(&:first)
      expect(b_times.count { _1 < started + at_least }).to be >= 10
      expect(done.keys).to match_array([backed, *later, *others])
      expect(redis.call("ZCARD", "retry") + redis.call("ZCARD", "dead")).to eq(0)
    end
  end

  it "fails an error back_off_on does not list, which Sidekiq retries" do
    start_processes
    failing = job.perform_async("a", "unlisted", 0.01)

    wait_until(message: "the job in the retry set") { Sidekiq::RetrySet.new.find_job(failing) }
    expect(redis.call("KEYS", "*back_off")).to be_empty
    expect(done).to be_empty
  end
end
