# frozen_string_literal: true

require "json"
require_relative "own_redis_server"

# A master, a replica and three sentinels of one example's own, all real
# servers (redis-server, and the same program in --sentinel mode), with small
# down-after and failover timeouts so that a failover takes a second or two.
# `password`: the data servers' requirepass (and the replica's masterauth, the
# sentinels' auth-pass); `acl_user`: [name, password] of one more user of the
# data servers, allowed everything; `sentinel_user`: [name, password] of the
# sentinels' only user (their default user off), which they also use
# among themselves.
class SentinelCluster
  NAME = "mymaster"
  QUORUM = 2
  DOWN_AFTER_MS = 1000
  # Sentinel waits twice this before a new failover of the same master.
  FAILOVER_TIMEOUT_MS = 2000

  attr_reader :servers, :sentinel_ports

  def initialize(password: nil, acl_user: nil, sentinel_user: nil)
    @password = password
    @sentinel_user = sentinel_user
    args = [*(["--masterauth", password] if password),
            *(["--user", acl_user[0], "on", ">#{acl_user[1]}", "~*", "&*", "+@all"] if acl_user)]
    @servers = Array.new(2) { OwnRedisServer.new(password: password, args: args) }
    @sentinel_ports = Array.new(3) { LimitFetchTools.free_port }
    @sentinel_pids = []
  end

  def start
    master, replica = servers
    master.start
    replica.start
    replica.call("REPLICAOF", "127.0.0.1", master.port.to_s)
    sentinel_ports.each { |port| @sentinel_pids << start_sentinel(port, master.port) }
    LimitFetchTools.wait_for("the sentinels to name the master", timeout: 10) { self.master == master }
    self
  end

  # The server the sentinels name as master now.
  def master
    port = sentinel_call(sentinel_ports.first, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", NAME)&.last.to_i
    servers.find { |server| server.port == port }
  end

  # The sentinels' addresses, as Sidekiq's `sentinels:` takes them.
  def sentinels = sentinel_ports.map { |port| {host: "127.0.0.1", port: port} }

  # Waits until every sentinel names +server+ as master, each knows the
  # other two sentinels and +replicas+, and they replicate from +server+:
  # then a failover, asked for or after a crash, can happen.
  def wait_until_ready(server, replicas: servers.reject { _1 == server }.select(&:running?))
    LimitFetchTools.wait_for("the sentinels to agree on #{server.port} with #{replicas.size} replica(s)",
      timeout: 20) do
      sentinel_ports.all? { |port| ready?(port, server, replicas) } &&
        replicas.all? { |replica| replica.call("INFO", "replication").include?("master_link_status:up") }
    rescue RedisClient::ConnectionError
      # A sentinel that turns a master into a replica closes its clients.
      false
    end
  end

  # SENTINEL FAILOVER: the sentinels promote the replica at once, without
  # waiting for the master to be down. Returns the server promoted.
  # Asked again while the sentinel refuses (-NOGOODSLAVE: its last look at
  # the replica is too old, as on a loaded machine; -INPROG).
  def failover
    old = master
    LimitFetchTools.wait_for("a sentinel to accept SENTINEL FAILOVER", timeout: 15) do
      sentinel_call(sentinel_ports.first, "SENTINEL", "FAILOVER", NAME)
    rescue RedisClient::CommandError => e
      warn "SENTINEL FAILOVER refused (#{e.message}); asking again"
      sleep 0.5
      false
    end
    LimitFetchTools.wait_for("the sentinels to name a new master", timeout: 15) { master != old && master }
  end

  # A SIGKILL of the master (as a crash); the sentinels fail over once they
  # agree it is down (DOWN_AFTER_MS, then an election).
  def crash_master = master.crash

  def remove
    @sentinel_pids.each { LimitFetchTools::ChildProcess.kill(_1) }
    servers.each(&:remove)
  end

  def sentinel_call(port, *command)
    user, password = @sentinel_user
    conn = RedisClient.config(host: "127.0.0.1", port: port, username: user, password: password).new_client
    conn.call(*command)
  ensure
    conn&.close
  end

  private

  def start_sentinel(port, master_port)
    dir = servers.first.dir
    conf = File.join(dir, "sentinel-#{port}.conf")
    File.write(conf, <<~CONF)
      port #{port}
      bind 127.0.0.1
      dir #{dir}
      sentinel monitor #{NAME} 127.0.0.1 #{master_port} #{QUORUM}
      sentinel down-after-milliseconds #{NAME} #{DOWN_AFTER_MS}
      sentinel failover-timeout #{NAME} #{FAILOVER_TIMEOUT_MS}
      #{"sentinel auth-pass #{NAME} #{@password}" if @password}
      #{sentinel_acl}
    CONF
    pid = LimitFetchTools::ChildProcess.spawn({}, servers.first.program, conf, "--sentinel",
      log: File.join(dir, "sentinel-#{port}.log"))
    LimitFetchTools.wait_for("sentinel on #{port} did not answer", timeout: 10) do
      sentinel_call(port, "PING") == "PONG"
    rescue RedisClient::ConnectionError
      false
    end
    pid
  end

  def sentinel_acl
    return "" unless @sentinel_user

    user, password = @sentinel_user
    "user default off\nuser #{user} on >#{password} allcommands\n" \
      "sentinel sentinel-user #{user}\nsentinel sentinel-pass #{password}"
  end

  def ready?(port, server, replicas)
    return false unless sentinel_call(port, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", NAME)&.last.to_i == server.port

    known = sentinel_call(port, "SENTINEL", "REPLICAS", NAME).map { |r| r.is_a?(Hash) ? r : r.each_slice(2).to_h }
    replicas_known = replicas.all? do |replica|
      known.any? { |r| r["port"].to_i == replica.port && !r["flags"].include?("down") }
    end
    replicas_known && sentinel_call(port, "SENTINEL", "SENTINELS", NAME).size == sentinel_ports.size - 1
  end
end
