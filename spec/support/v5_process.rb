# frozen_string_literal: true

require "securerandom"

# A process of sidekiq-limit_fetch v5 (the Sidekiq 8 rewrite,
# HornsAndHooves-sidekiq-limit_fetch 5.x), reduced to what it does in Redis,
# as its code describes it: one capsule with a UUID, worker threads that
# fetch with one script and run the jobs (TrackedJob), and a heartbeat
# thread. Written here from that protocol, for the spec of a mixed fleet:
#
# - fetch: for each queue in order, the global and process limits (MGET),
#   the capsule's own busy entries (LPOS ... COUNT 0) under a process limit
#   and the busy list's length (LLEN) under a global limit; if both allow,
#   RPOP the queue and RPUSH the UUID to the queue's busy list. One script.
# - acknowledge: LREM the queue's busy list 1 UUID.
# - heartbeat, every period (15 s): in MULTI, SET the heartbeat key "1" with
#   an expiry of 4 periods and SADD the UUID to the capsules set; then reap:
#   every member of the capsules set whose heartbeat key does not read
#   exactly "1" is dead: in MULTI, SREM it, DEL its heartbeat, and LREM it
#   (all entries) from the busy lists of the queues this process serves.
# - shutdown: the same purge of its own UUID.
class V5Process
  PREFIX = "sidekiq:limit_fetch:"
  PERIOD = 15

  FETCH = <<~LUA
    -- KEYS: the queues ("queue:<name>"); ARGV[1]: the capsule's UUID
    for _, queue in ipairs(KEYS) do
      local base = 'sidekiq:limit_fetch:queue:' .. string.sub(queue, 7)
      local busy = base .. ':busy'
      local limits = redis.call('MGET', base .. ':limit', base .. ':process_limit')
      local limit, process_limit = tonumber(limits[1]), tonumber(limits[2])
      local mine_ok = not process_limit or #redis.call('LPOS', busy, ARGV[1], 'COUNT', 0) < process_limit
      local all_ok = not limit or redis.call('LLEN', busy) < limit
      if mine_ok and all_ok then
        local job = redis.call('RPOP', queue)
        if job then
          redis.call('RPUSH', busy, ARGV[1])
          return {queue, job}
        end
      end
    end
    return nil
  LUA

  attr_reader :uuid, :reaped

  # +queues+: bare names, in fetch order.
  def initialize(queues, concurrency:, redis_url:)
    @queues = queues
    @concurrency = concurrency
    @redis_url = redis_url
    @uuid = SecureRandom.uuid
    @reaped = Queue.new
    @stopping = false
    @threads = []
  end

  def start
    beat
    @threads << Thread.new { heartbeat_loop }
    @concurrency.times { @threads << Thread.new { work_loop } }
    self
  end

  # Stops fetching; +deregister+: purge itself as a clean shutdown does.
  # Without it, it dies as a killed process: its keys stay until they expire.
  def stop(deregister: true)
    @stopping = true
    @threads.each { |thread| thread.join(10) }
    purge([uuid]) if deregister
  end

  # One heartbeat: the capsule proves itself alive, then reaps.
  def beat
    with_redis do |conn|
      conn.multi do |multi|
        multi.call("SET", heartbeat_key(uuid), "1", "EX", PERIOD * 4)
        multi.call("SADD", "#{PREFIX}capsules", uuid)
      end
    end
    reap
  end

  # The UUIDs its reap took for dead.
  def reap
    dead = list_dead
    purge(dead)
    dead.each { |capsule| @reaped << capsule }
    dead
  end

  private

  def list_dead
    with_redis do |conn|
      uuids = conn.call("SMEMBERS", "#{PREFIX}capsules")
      next [] if uuids.empty?

      values = conn.call("MGET", *uuids.map { |capsule| heartbeat_key(capsule) })
      uuids.zip(values).filter_map { |capsule, value| capsule if value != "1" }
    end
  end

  def purge(uuids)
    return if uuids.empty?

    with_redis do |conn|
      conn.multi do |multi|
        multi.call("SREM", "#{PREFIX}capsules", *uuids)
        uuids.each do |capsule|
          multi.call("DEL", heartbeat_key(capsule))
          @queues.each { |queue| multi.call("LREM", busy_key(queue), 0, capsule) }
        end
      end
    end
  end

  def heartbeat_loop
    deadline = monotonic + PERIOD
    until @stopping
      sleep 0.05
      next if monotonic < deadline

      beat
      deadline = monotonic + PERIOD
    end
  end

  def work_loop
    until @stopping
      queue, job = with_redis { |conn| conn.call("EVAL", FETCH, @queues.size, *@queues.map { "queue:#{_1}" }, uuid) }
      next sleep(rand(0.05..0.1)) unless job

      perform(job)
      with_redis { |conn| conn.call("LREM", busy_key(queue.delete_prefix("queue:")), 1, uuid) }
    end
  end

  def perform(job)
    payload = JSON.parse(job)
    worker = Object.const_get(payload["class"]).new
    worker.jid = payload["jid"]
    worker.perform(*payload["args"])
  end

  def heartbeat_key(capsule) = "#{PREFIX}capsule:#{capsule}:heartbeat"

  def busy_key(queue) = "#{PREFIX}queue:#{queue}:busy"

  def monotonic = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  # A connection of its own per call, as v5's threads each take one from
  # Sidekiq's pool.
  def with_redis
    conn = RedisClient.config(url: @redis_url).new_client
    yield conn
  ensure
    conn&.close
  end
end
