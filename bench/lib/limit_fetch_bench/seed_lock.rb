# frozen_string_literal: true

module LimitFetchBench
  # Seed 002's approach (lock_around_an_id), for comparison: a server
  # middleware that takes a lock per tenant (SET NX, expiring after an hour
  # should the job hang) before the job runs and deletes it after; a job
  # whose tenant's lock is taken exits at once, dropped. (The seed finds
  # running jobs with KEYS on a pattern, which scans the whole keyspace; a
  # lock of one key per tenant is the same rule at the least cost.)
  class SeedLock
    include Sidekiq::ServerMiddleware

    TTL = 3600

    def call(_job, payload, _queue)
      key = "bench:seed002:#{payload["args"].first}"
      return Recorder.current&.job_dropped unless redis { _1.call("SET", key, payload["jid"], "NX", "EX", TTL) }

      begin
        yield
      ensure
        redis { _1.call("DEL", key) }
      end
    end
  end
end
