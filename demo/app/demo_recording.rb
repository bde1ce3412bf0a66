# frozen_string_literal: true

# Records, around a job, how many jobs of its queue run at once: across all
# processes, and within this one (named by DEMO_WORKER); and each jid that
# ran, to catch a job run twice.
module DemoRecording
  WORKER = ENV.fetch("DEMO_WORKER", "client")

  # KEYS: running, running in this process, max, max in this process, jids
  # run. ARGV: queue, jid.
  STARTED = <<~LUA
    local now = redis.call("HINCRBY", KEYS[1], ARGV[1], 1)
    local mine = redis.call("HINCRBY", KEYS[2], ARGV[1], 1)
    if now > tonumber(redis.call("HGET", KEYS[3], ARGV[1]) or 0) then
      redis.call("HSET", KEYS[3], ARGV[1], now)
    end
    if mine > tonumber(redis.call("HGET", KEYS[4], ARGV[1]) or 0) then
      redis.call("HSET", KEYS[4], ARGV[1], mine)
    end
    redis.call("HINCRBY", KEYS[5], ARGV[2], 1)
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

  # Runs the block, then sleeps `millis`, between the two records.
  def recorded(queue, millis)
    script(STARTED, ["demo:running", "demo:running:#{WORKER}", "demo:max", "demo:max:#{WORKER}", "demo:runs"],
      [queue, jid])
    yield if block_given?
    sleep(millis / 1000.0)
    outcome = "demo:done"
  ensure
    script(FINISHED, ["demo:running", "demo:running:#{WORKER}", outcome || "demo:failed", "demo:finished_at"],
      [queue, Time.now.to_f])
  end

  def script(lua, keys, argv)
    Sidekiq.redis { |conn| conn.call("EVAL", lua, keys.size, *keys, *argv) }
  end
end
