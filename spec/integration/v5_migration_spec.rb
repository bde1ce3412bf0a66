# frozen_string_literal: true

require_relative "../support/sidekiq_app"
require_relative "../support/sidekiq_processes"
require_relative "../support/v5_process"

# A rolling migration from v5: a `sidekiq` process of this gem and a
# process that follows v5's protocol (V5Process) share a queue and its
# limit. Each must leave the other's live capsule alone, and the limit hold
# across both, as recorded from inside the jobs.
RSpec.describe "a fleet of this gem's and v5's processes", :e2e do
  include SidekiqProcesses

  before(:context) { @app = SidekiqApp.new }
  after(:context) { @app&.remove }

  let(:app) { @app }

  after do |example|
    app.warn_logs if example.exception
    app.stop_all
  end

  it "shares a limit of 2 during a rolling migration: never exceeded, every job run once, no live capsule reaped" do
    # One thread here, three in v5: the limit binds v5, which can only keep
    # to it if our slot stays counted; and our process, which takes again
    # at once a slot it frees, cannot keep both slots from v5.
    config = app.write_config("mixed", queues: %w[shared], limits: {"shared" => 2}, concurrency: 1)
    before = registered_capsules
    ours = app.spawn("rs", config: config, heartbeat_period: 1)
    ours_uuid = await_registration([ours], before).first
    v5 = V5Process.new(%w[shared], concurrency: 3, redis_url: RedisServer.url).start

    jids = push_jobs("shared", 40, seconds: 0.25)
    # v5's reaper runs while our capsule holds busy entries, and finds it alive.
    wait_until(message: -> { "our process to hold a slot: #{busy_entries("shared")}" }) do
      busy_entries("shared").include?(ours_uuid)
    end
    expect(redis.call("GET", heartbeat_key(ours_uuid))).to eq("1")
    expect(v5.reap).to eq([])
    wait_until(timeout: 30, message: -> { "40 jobs done, #{done_jids.size} are" }) { done_jids.size >= 40 }

    expect(done_jids.sort).to eq(jids.sort)
    starts = started("shared").map { |entry| entry.split.last }
    expect(starts.tally.select { |_, n| n > 1 }).to eq({})
    expect(max_running("shared")).to eq(2)
    by_side = started("shared").group_by { |entry| entry.start_with?("rs/") ? :ours : :v5 }
    expect(by_side.keys).to contain_exactly(:ours, :v5)
    expect(v5.reaped.size).to eq(0)
    expect(ours.log).not_to include("reaped dead capsule #{v5.uuid}")
    expect(ours.log).not_to include("lost this capsule's registration")

    # v5 is killed while it runs a job: its slot stays booked until its
    # heartbeat expires (60 s, which the spec stands for by deleting the
    # key); only then does our process reap it.
    v5.stop(deregister: false)
    redis.call("RPUSH", queue_key("shared", "busy"), v5.uuid)
    expect(holds_for?(2.5) { busy_entries("shared") == [v5.uuid] }).to be(true),
      "our process reaped a v5 capsule whose heartbeat had not expired: #{busy_entries("shared")}"
    redis.call("DEL", heartbeat_key(v5.uuid))
    wait_until(timeout: 5, message: -> { "our process to reap the dead v5 capsule: #{busy_entries("shared")}" }) do
      busy_entries("shared").empty?
    end
    expect(registered_capsules).to eq([ours_uuid])
    stop_process(ours)
  end
end
