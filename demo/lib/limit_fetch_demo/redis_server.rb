# frozen_string_literal: true

module LimitFetchDemo
  # A redis-server of the demo's own, on a free port, keeping nothing on disk.
  class RedisServer
    attr_reader :url

    def initialize(dir)
      @dir = dir
      @port = free_port
      @url = "redis://127.0.0.1:#{@port}/0"
    end

    def start
      @pid = ChildProcess.spawn({}, "redis-server", "--port", @port.to_s, "--bind", "127.0.0.1",
        "--save", "", "--appendonly", "no", "--dir", @dir, log: log)
      LimitFetchDemo.wait_for("redis-server did not answer on #{url}", timeout: 10) { ready? }
      self
    end

    def stop
      ChildProcess.stop([@pid], timeout: 5) if @pid
      @pid = nil
    end

    def log = File.join(@dir, "redis.log")

    private

    def ready?
      raise Failure, "redis-server exited:\n#{LimitFetchDemo.tail(log)}" if ChildProcess.ended(@pid)

      RedisClient.new(url: url).then do |client|
        client.call("PING") == "PONG"
      ensure
        client.close
      end
    rescue RedisClient::CannotConnectError
      false
    end

    def free_port
      server = TCPServer.new("127.0.0.1", 0)
      server.addr[1]
    ensure
      server&.close
    end
  end
end
