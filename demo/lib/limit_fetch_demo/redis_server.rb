# frozen_string_literal: true

module LimitFetchDemo
  # A redis-server of the demo's own, on a free port, keeping nothing on disk
  # unless told otherwise (`persistence`: redis-server arguments). It keeps its
  # port and directory, so #start after #stop brings back the same server,
  # with whatever it persisted.
  class RedisServer
    NO_PERSISTENCE = ["--save", "", "--appendonly", "no"].freeze

    attr_reader :url

    def initialize(dir, persistence: NO_PERSISTENCE)
      @dir = dir
      @persistence = persistence
      @port = free_port
      @url = "redis://127.0.0.1:#{@port}/0"
    end

    def start
      @pid = ChildProcess.spawn({}, "redis-server", "--port", @port.to_s, "--bind", "127.0.0.1",
        *@persistence, "--dir", @dir, log: log)
      LimitFetchDemo.wait_for("redis-server did not answer on #{url}", timeout: 10) { ready? }
      self
    end

    # SIGTERM: Redis persists what it is configured to, then exits.
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
    rescue RedisClient::CommandError => e
      e.message.start_with?("LOADING") ? false : raise # LOADING: still reading what it persisted
    end

    def free_port
      server = TCPServer.new("127.0.0.1", 0)
      server.addr[1]
    ensure
      server&.close
    end
  end
end
