# frozen_string_literal: true

require "limit_fetch_bench/sampler"

module LimitFetchBench
  # Every start the gem counts in a rate's window (its starts sorted set,
  # scored by Redis's clock in µs, a member per start; or in data format 2
  # the string beside it: LimitFetchTools::WindowStamps), read whole. A
  # start stays there for the rate's period at least, so a sampling period
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
      zrange, string = client.pipelined { |pipe| LimitFetchTools::WindowStamps.reads(@key).each { pipe.call(*_1) } }
      LimitFetchTools::WindowStamps.starts(zrange, string).each { |name, at| @starts[name] = at / 1e6 }
    end
  end
end
