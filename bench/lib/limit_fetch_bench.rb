# frozen_string_literal: true

require "etc"
require "fileutils"
require "json"
require "io/wait"
require "open3"
require "optparse"
require "socket"
require "time"
require "tmpdir"

require "sidekiq"
require "sidekiq/fetch"
require "sidekiq/limit_fetch/version"

# bin/bench: Sidekiq::LimitFetch against Sidekiq's BasicFetch, on a Redis of
# its own. The driver (this process) starts Redis and a delay proxy, runs each
# measurement in a fresh Ruby process (bench/run_one.rb), alternating the
# variants run by run, and writes the results to bench/results.
module LimitFetchBench
  REPO = File.expand_path("../..", __dir__)
  RESULTS = File.join(REPO, "bench", "results")

  # A failure the bench explains itself; it ends the bench with status 1.
  class Failure < StandardError; end

  module_function

  def monotonic
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end

  def cpu_time
    Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
  end

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

  def tail(path, lines: 25)
    return "(no #{path})" unless File.exist?(path)

    File.readlines(path).last(lines).map { |line| "  | #{line}" }.join
  end

  def free_port
    server = TCPServer.new("127.0.0.1", 0)
    server.addr[1]
  ensure
    server&.close
  end
end

require "limit_fetch_bench/stats"
require "limit_fetch_bench/variant"
require "limit_fetch_bench/options"
require "limit_fetch_bench/redis_server"
require "limit_fetch_bench/delay_proxy"
require "limit_fetch_bench/child_process"
require "limit_fetch_bench/pusher"
require "limit_fetch_bench/trickle"
require "limit_fetch_bench/plan"
require "limit_fetch_bench/progress"
require "limit_fetch_bench/limit_check"
require "limit_fetch_bench/throughput_summary"
require "limit_fetch_bench/idle_summary"
require "limit_fetch_bench/fetch_cost_summary"
require "limit_fetch_bench/summary"
require "limit_fetch_bench/table"
require "limit_fetch_bench/markdown"
require "limit_fetch_bench/chart"
require "limit_fetch_bench/report"
require "limit_fetch_bench/runner"
