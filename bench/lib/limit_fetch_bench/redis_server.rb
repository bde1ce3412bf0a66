# frozen_string_literal: true

module LimitFetchBench
  # A redis-server of the bench's own, on a free port, keeping nothing on disk.
  class RedisServer
    attr_reader :port, :url

    def initialize(dir)
      @dir = dir
      @port = LimitFetchBench.free_port
      @url = "redis://127.0.0.1:#{@port}/0"
    end

    def start
      @pid = ChildProcess.spawn("redis-server", "--port", @port.to_s, "--bind", "127.0.0.1", "--save", "",
        "--appendonly", "no", "--dir", @dir, log: log)
      LimitFetchBench.wait_for("redis-server did not answer on #{url}", timeout: 10) { ready? }
      @client = RedisClient.new(url: url)
      self
    end

    def stop
      @client&.close
      ChildProcess.stop(@pid) if @pid
      @pid = nil
    end

    def call(*command) = @client.call(*command)

    def version = call("INFO", "server")[/redis_version:(\S+)/, 1]

    def log = File.join(@dir, "redis.log")

    private

    def ready?
      raise Failure, "redis-server exited:\n#{LimitFetchBench.tail(log)}" if ChildProcess.ended(@pid)

      client = RedisClient.new(url: url)
      client.call("PING") == "PONG"
    rescue RedisClient::CannotConnectError
      false
    ensure
      client&.close
    end
  end
end
