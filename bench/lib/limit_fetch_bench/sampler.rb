# frozen_string_literal: true

module LimitFetchBench
  # Reads something of Redis every `period` seconds, on a thread and a
  # connection of its own, until stopped, and once more as it stops (what
  # changed since the last read is in); counts its reads (`calls`), which
  # a run takes out of the Redis commands it reports. A subclass reads in
  # `read(client)`.
  class Sampler
    attr_reader :calls

    def initialize(url, period)
      @client = RedisClient.new(url: url)
      @period = period
      @calls = 0
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

    def stop
      @stop << true
      @thread&.join
      sample
      @client.close
      self
    end

    private

    def sample
      @calls += 1
      read(@client)
    end
  end
end
