# frozen_string_literal: true

module LimitFetchBench
  # What 10,000 distinct keys leave in Redis: an embedded LimitFetch Sidekiq
  # starts on the empty queue and settles; Redis's used_memory and keys are
  # read; the jobs, a distinct key each, are pushed and run; once they are
  # done and the acknowledgements have landed, Redis is read again. Keys of
  # job limits (sidekiq:limit_fetch:limit:*) and members of the parked set
  # left behind are what the keys would cost when idle: none expected.
  class KeysRun
    SETTLE = 0.5
    LIMIT_KEYS = "#{GemKeys::PREFIX}limit:*".freeze

    def initialize(spec)
      @spec = spec
      @variant = Variant[spec["variant"]]
      @recorder = Recorder.current = Recorder.new
      @redis = RedisClient.new(url: spec["redis_url"])
    end

    def run
      sidekiq = EmbeddedSidekiq.new(@variant, url: @spec["server_url"], recorder: @recorder, log: @spec["log"])
      sidekiq.prepare.start
      before = settled
      jobs = push
      @recorder.expect(jobs)
      finished = @recorder.done_within?(@spec["timeout"])
      after = settled if finished
      sidekiq.stop
      raise Failure, "#{@recorder.done} of #{jobs} jobs done after #{@spec["timeout"]} s" unless finished

      result(jobs, before, after)
    end

    private

    def result(jobs, before, after)
      added = after.delete("keys") - before.delete("keys")
      {"jobs" => jobs, "before" => before, "after" => after, "new_keys" => added.size,
       "new_key_names" => added.first(20)}
    end

    def push
      pusher = KeyedPusher.new(@spec["redis_url"])
      pusher.distinct(@spec["keys"], true)
    ensure
      pusher&.close
    end

    def settled
      sleep SETTLE
      keys = @redis.call("KEYS", "*").sort
      {"used_memory" => @redis.call("INFO", "memory")[/^used_memory:(\d+)/, 1].to_i, "key_count" => keys.size,
       "limit_keys" => keys.count { File.fnmatch?(LIMIT_KEYS, _1) },
       "parked_members" => @redis.call("SCARD", GemKeys::PARKED), "keys" => keys}
    end
  end
end
