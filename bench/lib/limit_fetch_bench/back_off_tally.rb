# frozen_string_literal: true

module LimitFetchBench
  # What a back_off run's jobs and Sidekiq left in Redis once it ended
  # (BackOffJobs' records): whether every pushed job was done exactly once,
  # the job runs, the jobs retried and their highest retry count, the retry
  # and dead sets, Sidekiq's failed and processed counts.
  class BackOffTally
    def initialize(redis, jids)
      @redis = redis
      @jids = jids
    end

    def to_h = done.merge(retries)

    private

    def done
      counts = @redis.call("HGETALL", BackOffJobs::DONE)
      once = counts.count { |jid, count| count == "1" && @jids.include?(jid) }
      {"done_jobs" => counts.size, "done_once" => once == @jids.size && counts.size == @jids.size,
       "done_more_than_once" => counts.count { |_, count| count.to_i > 1 }}
    end

    def retries
      counts = @redis.call("HVALS", BackOffJobs::RETRY_COUNTS).map(&:to_i)
      {"runs" => @redis.call("HVALS", BackOffJobs::RUNS).sum(&:to_i), "retried_jobs" => counts.size,
       "max_retry_count" => counts.max, "retry_set_end" => @redis.call("ZCARD", "retry"),
       "dead_set" => @redis.call("ZCARD", "dead"), "failed" => stat("failed"), "processed" => stat("processed")}
    end

    def stat(name) = @redis.call("GET", "stat:#{name}").to_i
  end
end
