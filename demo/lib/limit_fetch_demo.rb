# frozen_string_literal: true

require "fileutils"
require "forwardable"
require "open3"
require "optparse"
require "socket"
require "tmpdir"
require "yaml"

# bin/demo: two Sidekiq processes on their own Redis, running jobs through
# sidekiq-limit_fetch-rs, watched live. Sidekiq itself is loaded only once the
# demo app's bundle is installed (App#load_bundle).
module LimitFetchDemo
  REPO = File.expand_path("../..", __dir__)

  # A failure the demo explains itself; it ends the demo with status 1.
  class Failure < StandardError; end

  module_function

  def monotonic
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end

  # Calls the block every `interval` seconds until it returns a truthy value,
  # which it returns; raises Failure with `message` after `timeout` seconds.
  def wait_for(message, timeout:, interval: 0.1)
    deadline = monotonic + timeout
    loop do
      result = yield
      return result if result
      raise Failure, "#{message} (waited #{timeout} s)" if monotonic > deadline

      sleep interval
    end
  end

  # Runs the block outside the bundle this process may run in, so that the
  # commands it starts use the Gemfile they are given, not this one.
  def unbundled(&)
    defined?(Bundler) ? Bundler.with_unbundled_env(&) : yield
  end

  def tail(path, lines: 25)
    return "(no #{path})" unless File.exist?(path)

    File.readlines(path).last(lines).map { |line| "  | #{line}" }.join
  end
end

require "limit_fetch_demo/options"
require "limit_fetch_demo/columns"
require "limit_fetch_demo/sidekiq_config"
require "limit_fetch_demo/plan"
require "limit_fetch_demo/child_process"
require "limit_fetch_demo/redis_server"
require "limit_fetch_demo/app"
require "limit_fetch_demo/workers"
require "limit_fetch_demo/stats"
require "limit_fetch_demo/view"
require "limit_fetch_demo/watch"
require "limit_fetch_demo/summary"
require "limit_fetch_demo/runner"
