# frozen_string_literal: true

module LimitFetchBench
  # What a fair run's jobs counted from inside (FairJobs): whether every job
  # pushed (`jids`) was done exactly once, by jid, and the most of the class
  # running at once.
  class FairTally
    def initialize(redis, run, jids)
      @counts = redis.call("HGETALL", FairJobs.key(run, "done")).transform_values(&:to_i)
      @max = redis.call("GET", FairJobs.key(run, "max")).to_i
      @jids = jids
    end

    def to_h
      {"jobs" => @jids.size, "done" => @counts.size, "not_done" => @jids.count { !@counts.key?(_1) },
       "more_than_once" => @counts.count { _2 > 1 }, "unknown" => (@counts.keys - @jids).size,
       "done_once" => done_once?, "max_running" => @max}
    end

    private

    def done_once? = @counts.size == @jids.size && @jids.all? { @counts[_1] == 1 }
  end
end
