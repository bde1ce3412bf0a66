# frozen_string_literal: true

module LimitFetchBench
  # Pushes BenchJobs the way an application does (Sidekiq::Client), straight
  # to Redis (never through the delay proxy), with a connection of its own.
  class Pusher
    JOB = "LimitFetchBench::BenchJob"

    def initialize(url)
      @config = Sidekiq::Config.new
      @config.redis = {url: url}
      @config.logger.level = :warn
      @client = Sidekiq::Client.new(config: @config)
    end

    def bulk(count, seconds)
      @client.push_bulk("class" => JOB, "queue" => Variant::QUEUE, "retry" => false, "batch_size" => 1_000,
        "args" => Array.new(count) { [seconds] })
    end

    # One no-op job carrying its push time.
    def one
      @client.push("class" => JOB, "queue" => Variant::QUEUE, "retry" => false,
        "args" => [0, Process.clock_gettime(Process::CLOCK_REALTIME)])
    end

    # Connects now, so that the first push does not pay for it.
    def warm = @config.redis { |conn| conn.call("PING") }

    def close = @config.redis_pool.shutdown(&:close)
  end
end
