# frozen_string_literal: true

require "fileutils"
require "socket"
require "tmpdir"

# What bin/bench, bin/demo, bin/chaos and the specs share to run other
# programs: a redis-server of their own (RedisServer) and child processes
# (ChildProcess), with the few helpers those need, and their command-line
# options (Options). Not part of the gem: the gemspec ships lib/ only.
# RedisServer talks to Redis through RedisClient, which its users load (with
# Sidekiq; bin/demo only once its app's bundle is set up, so this file loads
# no gem).
module LimitFetchTools
  # A failure the tools explain themselves (a server that would not start);
  # each driver's own Failure, which ends it with status 1.
  class Failure < StandardError; end

  module_function

  def monotonic = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  # The machine's CPU model as the kernel names it ("Intel(R) Xeon(R)
  # Processor"), for a report's figures; nil where /proc/cpuinfo names none.
  def cpu_model = File.read("/proc/cpuinfo")[/^model name\s*:\s*(.+)$/, 1]

  # Calls the block every `interval` seconds until it returns a truthy value,
  # which it returns; raises Failure with `message` after `timeout` seconds.
  def wait_for(message, timeout:, interval: 0.05)
    deadline = monotonic + timeout
    loop do
      result = yield
      return result if result
      raise Failure, "#{message} (waited #{timeout} s)" if monotonic > deadline

      sleep interval
    end
  end

  # The last lines of a log, indented, to show in a failure.
  def tail(path, lines: 25)
    return "(no #{path})" unless File.exist?(path)

    File.readlines(path).last(lines).map { |line| "  | #{line}" }.join
  end

  # The servers the tools run, by the name LIMIT_FETCH_SERVER gives
  # (bin/test --server, bin/chaos --server): Redis, or Valkey, which speaks
  # the same protocol and runs the same scripts. tests/support/mod.rs reads
  # the same variable for the core's tests.
  SERVERS = {"redis" => "redis-server", "valkey" => "valkey-server"}.freeze

  # The program of the server LIMIT_FETCH_SERVER names (default: Redis);
  # raises Failure naming a server it does not know.
  def server_program
    name = ENV.fetch("LIMIT_FETCH_SERVER", "redis")
    SERVERS.fetch(name) do
      raise Failure, "server #{name.inspect}: not one the tools run (#{SERVERS.keys.join(", ")})"
    end
  end

  # A TCP port nothing listens on now (the kernel's pick, closed again).
  def free_port = TCPServer.open("127.0.0.1", 0) { _1.addr[1] }

  # Runs the block outside the bundle this process may run in, so that the
  # commands it starts use the Gemfile they are given, not this one.
  def unbundled(&)
    defined?(Bundler) ? Bundler.with_unbundled_env(&) : yield
  end
end

require_relative "limit_fetch_tools/child_process"
require_relative "limit_fetch_tools/redis_server"
require_relative "limit_fetch_tools/platform_gem"
require_relative "limit_fetch_tools/options"
