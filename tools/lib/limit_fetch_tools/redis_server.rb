# frozen_string_literal: true

require_relative "served"

module LimitFetchTools
  # A redis-server of a driver's or a spec's own, on a free port (or only a
  # Unix socket) and in a directory of its own, both kept: #start after #stop
  # brings back the same server, with whatever it persisted, for outages.
  # Persists nothing unless `aof:`; `password:` is required of every client
  # (the helper's own clients give it); `args`: more redis-server arguments,
  # which win over these (TLS, --dbfilename...). Redis's log: #log_path.
  class RedisServer
    BOOT_TIMEOUT = 10
    STOP_TIMEOUT = 5
    NO_PERSISTENCE = ["--save", "", "--appendonly", "no"].freeze
    # An fsync before every write is answered: whatever Redis acknowledged
    # survives a restart, even a crash (SIGTERM flushes the AOF anyway).
    AOF = ["--save", "", "--appendonly", "yes", "--appendfsync", "always"].freeze

    attr_reader :port, :dir, :program

    # `dir`: for its log, data and socket; by default a temporary directory
    # of its own, which #remove deletes.
    # The program is redis-server or valkey-server, as LIMIT_FETCH_SERVER
    # says (LimitFetchTools.server_program).
    def initialize(dir: nil, aof: false, password: nil, unix_socket: false, args: [])
      @program = LimitFetchTools.server_program
      @own_dir = dir.nil?
      @dir = dir || Dir.mktmpdir("limit-fetch-redis-")
      @password = password
      @port = LimitFetchTools.free_port unless unix_socket
      listen = unix_socket ? ["--port", "0", "--unixsocket", socket_path] : ["--port", port.to_s, "--bind", "127.0.0.1"]
      @args = [*listen, "--dir", @dir, *(aof ? AOF : NO_PERSISTENCE), *(["--requirepass", password] if password), *args]
    end

    def url(db: 0, userinfo: nil) = "redis://#{"#{userinfo}@" if userinfo}127.0.0.1:#{port}/#{db}"

    def socket_path = File.join(dir, "redis.sock")

    def log_path = File.join(dir, "redis.log")

    def log = File.exist?(log_path) ? File.read(log_path) : "(no log)"

    def running? = !@pid.nil?

    # Started until it answers PING; stopped with SIGTERM: Redis persists
    # what it is configured to, then exits.
    include Served

    def command = [program, *@args]

    def name = program

    def address = port || socket_path

    # SIGKILL, as a crash: nothing is persisted, no client is told.
    def crash
      ChildProcess.kill(@pid) if @pid
      @pid = nil
    end

    # SHUTDOWN: persists what it is configured to (with AOF, fsyncs it) and
    # exits, as an operator's restart would; returns once the process is gone.
    def shutdown
      with_client do |conn|
        conn.call("SHUTDOWN")
      rescue RedisClient::ConnectionError
        nil # the server closes the connection as it exits
      end
      ChildProcess.wait(@pid, timeout: STOP_TIMEOUT) or raise Failure, "#{program} did not exit on SHUTDOWN"
      @pid = nil
    end

    # SIGSTOP: the server stops answering, its clients' connections stay
    # open (as a stalled VM); #resume (SIGCONT) lets it go on.
    def pause = ChildProcess.signal("STOP", @pid)

    def resume = ChildProcess.signal("CONT", @pid)

    # SHUTDOWN SAVE: writes dump.rdb into #dir (even with `--save ""`) and
    # exits; returns once the process is gone.
    def shutdown_save
      with_client do |conn|
        conn.call("SHUTDOWN", "SAVE")
      rescue RedisClient::ConnectionError
        nil # the server closes the connection as it exits
      end
      ChildProcess.wait(@pid, timeout: STOP_TIMEOUT) or raise Failure, "#{program} did not exit on SHUTDOWN SAVE"
      @pid = nil
    end

    # Stops the server and, if it made its directory, removes it.
    def remove
      stop
      FileUtils.rm_rf(dir) if @own_dir
    end

    # A client authenticated as the helper's own user; the caller closes it.
    def client(**)
      where = port ? {host: "127.0.0.1", port: port} : {path: socket_path}
      RedisClient.config(**where, password: @password, **).new_client
    end

    def with_client(**)
      conn = client(**)
      yield conn
    ensure
      conn&.close
    end

    # One command on a connection of its own (a connection kept would not
    # outlive a restart).
    def call(*command) = with_client { _1.call(*command) }

    # The server's own version: Valkey reports Redis's protocol version as
    # redis_version, and its own as valkey_version.
    def version
      info = call("INFO", "server")
      info[/valkey_version:(\S+)/, 1] || info[/redis_version:(\S+)/, 1]
    end

    # "Redis 8.0.6", "Valkey 9.1.0": for reports.
    def description = "#{program.start_with?("valkey") ? "Valkey" : "Redis"} #{version}"

    private

    def ready?
      status = ChildProcess.ended(@pid)
      raise Failure, "#{program} exited (#{status})" if status

      call("PING") == "PONG"
    rescue RedisClient::ConnectionError # refused, or reset as it starts
      false
    rescue RedisClient::CommandError => e
      e.message.start_with?("LOADING") ? false : raise # still reading what it persisted
    end
  end
end
