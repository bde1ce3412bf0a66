# frozen_string_literal: true

require_relative "../support/sidekiq_app"
require_relative "../support/own_redis_server"

# A real `sidekiq` process: its CLI runs Process.warmup, which compacts the
# heap, and here it compacts at every major GC too. Redis goes away for
# longer than its fetches wait and its heartbeat beats, so both raise; the
# process must live through it and go on once Redis is back.
RSpec.describe "a sidekiq process through a Redis outage", :e2e do
  # AOF, so that the queue and the limits outlive the restart.
  let(:server) { OwnRedisServer.new(aof: true) }
  let(:app) { SidekiqApp.new }

  # The spec's own view of Redis is the process's server, not the suite's.
  def redis
    @redis ||= server.client
  end

  before { server.start }

  after do |example|
    warn "---- sidekiq log (last 60 lines)\n#{@process.log_tail(60)}" if example.exception && @process
    app.remove
    redis.close
    server.remove
  end

  def process_alive!(what)
    expect(@process).to be_alive, "the process died #{what} (#{@process.status.inspect}); " \
                                  "log:\n#{@process.log_tail(60)}"
  end

  it "survives the errors its fetches and heartbeat raise, then fetches within its limit again" do
    config = app.write_config("outage", queues: %w[outage], limits: {"outage" => 2}, concurrency: 4)
    @process = app.spawn("P", config: config, heartbeat_period: 1, redis_url: server.url, compact: true)
    wait_until(timeout: 30, message: -> { "the process to start; log:\n#{@process.log_tail}" }) do
      process_alive!("while starting")
      redis.call("SCARD", LimitFetchHelpers::CAPSULES_KEY) == 1 && @process.log.include?("heap compactions so far")
    end
    expect(@process.log[/heap compactions so far: (\d+)/, 1].to_i).to be >= 1
    before = push_jobs("outage", 8, seconds: 0.05)
    wait_until(timeout: 20, message: "the first jobs to run") { done_jids("outage").size == 8 }

    redis.close
    server.stop
    # Longer than fetch_timeout (2 s, Sidekiq's BRPOP default) and several
    # heartbeat periods: each fetching thread and the heartbeat raise.
    raised = /Sidekiq::LimitFetch::ConnectionError|Redis connection error/
    deadline = monotonic_now + 6
    while monotonic_now < deadline
      process_alive!("while Redis was down")
      sleep 0.1
    end
    expect(@process.log).to include("sidekiq-limit_fetch heartbeat failed: Sidekiq::LimitFetch::ConnectionError")
    expect(@process.log.lines.grep(raised).size).to be > 1

    server.start
    after = push_jobs("outage", 16, seconds: 0.1)
    wait_until(timeout: 30, message: -> { "the jobs pushed after the outage to run: #{done_jids("outage").size}" }) do
      process_alive!("after Redis came back")
      done_jids("outage").size == 24
    end
    expect(done_jids("outage").sort).to eq((before + after).sort)
    expect(max_running("outage")).to eq(2)
    expect(@process.log).to include("heartbeat recovered")
    expect(@process.log).not_to include("[BUG]")

    @process.signal("TERM")
    status = @process.wait(30)
    expect(status).to be_success, "the process exited with #{status.inspect}; log:\n#{@process.log_tail(60)}"
    expect(redis.call("SCARD", LimitFetchHelpers::CAPSULES_KEY)).to eq(0)
  end
end
