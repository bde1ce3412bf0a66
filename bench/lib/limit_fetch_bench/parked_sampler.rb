# frozen_string_literal: true

module LimitFetchBench
  # Samples the length of a list (a job limit's parked jobs) every
  # `period` seconds, on a thread and a connection of its own, and keeps the
  # longest seen; counts its own LLEN calls, which the run takes out of the
  # Redis commands it reports.
  class ParkedSampler
    attr_reader :max, :calls

    def initialize(url, key, period: 0.05)
      @client = RedisClient.new(url: url)
      @key = key
      @period = period
      @max = @calls = 0
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

    # Stops the sampling after one last sample.
    def stop
      @stop << true
      @thread&.join
      @client.close
      self
    end

    private

    def sample
      @calls += 1
      @max = [@max, @client.call("LLEN", @key)].max
    end
  end
end
