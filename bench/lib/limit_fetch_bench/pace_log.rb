# frozen_string_literal: true

module LimitFetchBench
  # What the idle run's PacedJobs (one start per window of `period`) note
  # from inside perform: when each started (CLOCK_REALTIME, read first) and
  # when its fetch counted its start (the newest score of its class's starts
  # set, Redis's clock; the job before it has left the window, and the next
  # cannot start within it). Redis runs on this machine: one clock for both.
  # The window a job waited for opened a period after the start before it.
  class PaceLog
    def initialize(url, starts_key, period)
      @client = RedisClient.new(url: url)
      @key = starts_key
      @period = period
      @lock = Mutex.new
      @entries = []
      @signal = Thread::Queue.new
    end

    # From inside a PacedJob.
    def started
      now = Process.clock_gettime(Process::CLOCK_REALTIME)
      @lock.synchronize do
        newest = @client.call("ZRANGE", @key, -1, -1, "WITHSCORES").flatten
        @entries << {"started" => now, "counted" => newest.empty? ? nil : Float(newest[1]) / 1e6}
        @signal << true if @entries.size == @expected
      end
    end

    # Waits until `count` jobs started (true) or `timeout` seconds passed.
    def started_within?(count, timeout)
      @lock.synchronize do
        @expected = count
        return true if @entries.size >= count
      end
      !@signal.pop(timeout: timeout).nil?
    end

    def close = @client.close

    def entries = @lock.synchronize { @entries.dup }

    # Pickup latencies, in seconds: from the moment each job's window opened
    # to its start, from the entries ([{"started" =>, "counted" =>}, ...]);
    # nil if a job found no start counted (none can be worked out).
    def self.latencies(entries, period) = after_openings(entries, period, "started")

    # The part of those until the fetch that took each job counted its start
    # (Redis's clock): the rest is Sidekiq's, from the fetch to perform.
    def self.fetch_latencies(entries, period) = after_openings(entries, period, "counted")

    def self.after_openings(entries, period, key)
      return nil if entries.any? { _1["counted"].nil? }

      entries.sort_by { _1["counted"] }.each_cons(2).map { |before, job| job[key] - (before["counted"] + period) }
    end
  end
end
