# frozen_string_literal: true

module LimitFetchBench
  # Collects every start the gem counts in a rate's window (its starts
  # sorted set, scored by Redis's clock in µs, a member per start): reads
  # the whole set every `period` seconds, on a thread and a connection of
  # its own. A start stays in the set for the rate's period at least, so a
  # sampling period well under it misses none. Counts its own ZRANGE calls,
  # which the run takes out of the Redis commands it reports.
  class StartsSampler
    attr_reader :calls

    def initialize(url, key, period: 0.2)
      @client = RedisClient.new(url: url)
      @key = key
      @period = period
      @calls = 0
      @starts = {}
      @stop = Thread::Queue.new
    end

    def start
      @thread = Thread.new do
        loop do
          sample
          break if @stop.pop(timeout: @period)
        end
      end
      self
    end

    # Stops the sampling, then samples once more: the starts since the
    # thread's last sample are in.
    def stop
      @stop << true
      @thread&.join
      sample
      @client.close
      self
    end

    # The starts seen, in seconds by Redis's clock, in order.
    def times = @starts.values.sort

    private

    def sample
      @calls += 1
      # RESP3 gives [[member, score], ...], RESP2 [member, score, ...].
      @client.call("ZRANGE", @key, 0, -1, "WITHSCORES").flatten.each_slice(2) do |member, score|
        @starts[member] = Float(score) / 1e6
      end
    end
  end
end
