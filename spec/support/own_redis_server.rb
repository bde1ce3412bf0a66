# frozen_string_literal: true

require "fileutils"
require "redis-client"
require "socket"
require "tmpdir"

# A redis-server of one example's own, for the specs that need a server set
# up differently from the suite's (a Unix socket, a password, ACL users) or
# one they can stop and start again. It lives in a temporary directory (its
# log, its socket and any dump.rdb go there) and always keeps the same port,
# directory and arguments, so that #start after #stop or #shutdown_save
# brings back the same server, with what it saved.
class OwnRedisServer
  BOOT_TIMEOUT = 10

  attr_reader :port, :dir

  # +args+: extra redis-server arguments, e.g. ["--requirepass", "secret"].
  # +password+ is what the helper's own clients authenticate with.
  # +unix_socket+: listen on #socket_path only (`--port 0`), no TCP port.
  def initialize(args: [], password: nil, unix_socket: false)
    @args = args
    @password = password
    @unix_socket = unix_socket
    @dir = Dir.mktmpdir("lf_own_redis")
    @port = unix_socket ? nil : TCPServer.open("127.0.0.1", 0) { |server| server.addr[1] }
    @pid = nil
  end

  def socket_path
    File.join(dir, "redis.sock")
  end

  def log_path
    File.join(dir, "redis.log")
  end

  def url(db: 0, userinfo: nil)
    "redis://#{"#{userinfo}@" if userinfo}127.0.0.1:#{port}/#{db}"
  end

  def start
    listen = @unix_socket ? ["--port", "0", "--unixsocket", socket_path] : ["--port", port.to_s, "--bind", "127.0.0.1"]
    @pid = Process.spawn("redis-server", *listen, "--dir", dir, "--logfile", log_path, "--appendonly", "no", *@args,
      in: File::NULL, out: File::NULL, err: File::NULL)
    wait_until_ready
    self
  end

  def running?
    !@pid.nil?
  end

  # SIGTERM, then reap. Saves nothing unless the server has save points.
  def stop
    return unless @pid

    Process.kill("TERM", @pid)
    Process.wait(@pid)
  rescue Errno::ESRCH, Errno::ECHILD
    nil
  ensure
    @pid = nil
  end

  # SHUTDOWN SAVE: writes dump.rdb into #dir (even with `--save ""`) and
  # exits; waits until the process is gone.
  def shutdown_save
    with_client do |conn|
      conn.call("SHUTDOWN", "SAVE")
    rescue RedisClient::ConnectionError
      nil # the server closes the connection as it exits
    end
    Process.wait(@pid)
    @pid = nil
  end

  # A client authenticated as the helper's own user; the caller closes it.
  def client(**)
    where = @unix_socket ? {path: socket_path} : {host: "127.0.0.1", port: port}
    RedisClient.config(**where, password: @password, **).new_client
  end

  def with_client(**)
    conn = client(**)
    yield conn
  ensure
    conn&.close
  end

  def log
    File.exist?(log_path) ? File.read(log_path) : "(no log)"
  end

  # Stops the server and removes its directory.
  def remove
    stop
    FileUtils.rm_rf(dir)
  end

  private

  def wait_until_ready
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + BOOT_TIMEOUT
    begin
      with_client { |conn| conn.call("PING") }
    rescue RedisClient::ConnectionError, RedisClient::CommandError => e
      # Refused, reset while the server starts, or LOADING its data.
      raise if e.is_a?(RedisClient::CommandError) && !e.message.start_with?("LOADING")

      if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
        where = port || socket_path
        raise "redis-server #{@args.inspect} on #{where} did not answer PING within #{BOOT_TIMEOUT}s:\n#{log}"
      end

      sleep 0.02
      retry
    end
  end
end
