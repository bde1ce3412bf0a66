# frozen_string_literal: true

require "limit_fetch_bench/sampler"

module LimitFetchBench
  # The longest a list (a job limit's parked jobs) was, read with LLEN.
  class ParkedSampler < Sampler
    attr_reader :max

    def initialize(url, key, period: 0.05)
      super(url, period)
      @key = key
      @max = 0
    end

    private

    def read(client)
      @max = [@max, client.call("LLEN", @key)].max
    end
  end
end
