# frozen_string_literal: true

# The app that bin/demo's Sidekiq processes load (`sidekiq -r ./app.rb`).
require "sidekiq"
require "sidekiq-limit_fetch"

# A short job that records in Redis, while it runs, how many jobs of its queue
# are running at once: across all processes, and within this one (named by
# DEMO_WORKER). bin/demo reads these counters (see demo/lib/limit_fetch_demo/stats.rb).
class DemoJob
  include Sidekiq::Job

  sidekiq_options retry: false

  WORKER = ENV.fetch("DEMO_WORKER")

  # KEYS: running, running in this process, max, max in this process. ARGV: queue.
  STARTED = <<~LUA
    local now = redis.call("HINCRBY", KEYS[1], ARGV[1], 1)
    local mine = redis.call("HINCRBY", KEYS[2], ARGV[1], 1)
    if now > tonumber(redis.call("HGET", KEYS[3], ARGV[1]) or 0) then
      redis.call("HSET", KEYS[3], ARGV[1], now)
    end
    if mine > tonumber(redis.call("HGET", KEYS[4], ARGV[1]) or 0) then
      redis.call("HSET", KEYS[4], ARGV[1], mine)
    end
  LUA

  # KEYS: running, running in this process, done or failed, finished at.
  # ARGV: queue, now (epoch seconds).
  FINISHED = <<~LUA
    redis.call("HINCRBY", KEYS[1], ARGV[1], -1)
    redis.call("HINCRBY", KEYS[2], ARGV[1], -1)
    redis.call("HINCRBY", KEYS[3], ARGV[1], 1)
    if tonumber(ARGV[2]) > tonumber(redis.call("GET", KEYS[4]) or 0) then
      redis.call("SET", KEYS[4], ARGV[2])
    end
  LUA

  def perform(queue, millis)
    script(STARTED, ["demo:running", "demo:running:#{WORKER}", "demo:max", "demo:max:#{WORKER}"], [queue])
    sleep(millis / 1000.0)
    outcome = "demo:done"
  ensure
    script(FINISHED, ["demo:running", "demo:running:#{WORKER}", outcome || "demo:failed", "demo:finished_at"],
      [queue, Time.now.to_f])
  end

  private

  def script(lua, keys, argv)
    Sidekiq.redis { |conn| conn.call("EVAL", lua, keys.size, *keys, *argv) }
  end
end
