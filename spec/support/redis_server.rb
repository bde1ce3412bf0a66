# frozen_string_literal: true

require "redis-client"
require "socket"
require "tmpdir"
require "uri"

# The Redis the suite runs against: ENV["REDIS_URL"] when set, else a private
# redis-server on a free port that lives as long as the suite. Its URL is put
# in ENV["REDIS_URL"] so the Sidekiq processes the end-to-end specs start find
# it too.
module RedisServer
  BOOT_TIMEOUT = 10

  class << self
    attr_reader :url

    def start
      return @url if @url

      if ENV["REDIS_URL"] && !ENV["REDIS_URL"].empty?
        @url = ENV["REDIS_URL"]
      else
        spawn_server
        ENV["REDIS_URL"] = @url
      end
      wait_until_ready
      @url
    end

    def stop
      return unless @pid

      Process.kill("TERM", @pid)
      Process.wait(@pid)
    rescue Errno::ESRCH, Errno::ECHILD
      nil
    ensure
      @pid = nil
    end

    # A fresh client; callers close it (or use #with_client).
    def client(db: nil)
      config = RedisClient.config(url: url, **(db ? {db: db} : {}))
      config.new_client
    end

    def with_client(db: nil)
      conn = client(db: db)
      yield conn
    ensure
      conn&.close
    end

    # A URL to the same server with another logical database.
    def url_for_db(db)
      uri = URI.parse(url)
      uri.path = "/#{db}"
      uri.to_s
    end

    private

    def spawn_server
      port = free_port
      dir = Dir.mktmpdir("limit_fetch_redis")
      @log = File.join(dir, "redis.log")
      @pid = Process.spawn("redis-server", "--port", port.to_s, "--bind", "127.0.0.1",
        "--save", "", "--appendonly", "no", "--dir", dir, "--logfile", @log,
        in: File::NULL, out: File::NULL, err: File::NULL)
      @url = "redis://127.0.0.1:#{port}/0"
      at_exit { stop }
    end

    def free_port
      server = TCPServer.new("127.0.0.1", 0)
      server.addr[1]
    ensure
      server&.close
    end

    def wait_until_ready
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + BOOT_TIMEOUT
      begin
        with_client { |conn| conn.call("PING") }
      rescue RedisClient::CannotConnectError
        if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
          log = @log && File.exist?(@log) ? File.read(@log) : "(no log)"
          raise "redis-server at #{@url} did not answer PING within #{BOOT_TIMEOUT}s:\n#{log}"
        end
        sleep 0.05
        retry
      end
    end
  end
end
