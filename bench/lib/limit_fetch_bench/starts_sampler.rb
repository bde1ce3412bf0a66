# frozen_string_literal: true

require "limit_fetch_bench/sampler"

module LimitFetchBench
  # Every start the gem counts in a rate's window (its starts sorted set,
  # scored by Redis's clock in µs, a member per start), read whole. A start
  # stays in the set for the rate's period at least, so a sampling period
  # well under it misses none.
  class StartsSampler < Sampler
    def initialize(url, key, period: 0.2)
      super(url, period)
      @key = key
      @starts = {}
    end

    # The starts seen, in seconds by Redis's clock, in order.
    def times = @starts.values.sort

    private

    def read(client)
      # RESP3 gives [[member, score], ...], RESP2 [member, score, ...].
      client.call("ZRANGE", @key, 0, -1, "WITHSCORES").flatten.each_slice(2) do |member, score|
        @starts[member] = Float(score) / 1e6
      end
    end
  end
end
