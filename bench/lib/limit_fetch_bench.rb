# frozen_string_literal: true

require "etc"
require "fileutils"
require "json"
require "io/wait"
require "open3"
require "optparse"
require "time"
require "tmpdir"

require "sidekiq"
require "sidekiq/fetch"
require "sidekiq/limit_fetch/version"
require_relative "../../tools/lib/limit_fetch_tools"
require_relative "../../tools/lib/limit_fetch_tools/markdown"

# bin/bench: Sidekiq::LimitFetch against Sidekiq's BasicFetch, on a Redis of
# its own. The driver (this process) starts Redis and a delay proxy, runs each
# measurement in a fresh Ruby process (bench/run_one.rb), alternating the
# variants run by run, and writes the results to bench/results.
module LimitFetchBench
  REPO = File.expand_path("../..", __dir__)
  RESULTS = File.join(REPO, "bench", "results")

  # A failure the bench explains itself (LimitFetchTools' own, so that the
  # Redis it starts fails alike); it ends the bench with status 1.
  Failure = LimitFetchTools::Failure

  module_function

  def monotonic = LimitFetchTools.monotonic

  # The CPU time of the whole process: every thread's, the Rust core's
  # (its Tokio runtime's) as well as Ruby's.
  def cpu_time
    Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
  end
end

require "limit_fetch_bench/stats"
require "limit_fetch_bench/twin"
require "limit_fetch_bench/variant"
require "limit_fetch_bench/keyed_variants"
require "limit_fetch_bench/rate_variants"
require "limit_fetch_bench/back_off_variants"
require "limit_fetch_bench/fair_variants"
require "limit_fetch_bench/fair_scenarios"
require "limit_fetch_bench/memory_variants"
require "limit_fetch_bench/section_spec"
require "limit_fetch_bench/options"
require "limit_fetch_bench/baseline"
require "limit_fetch_bench/delay_proxy"
require "limit_fetch_bench/measurement"
require "limit_fetch_bench/pusher"
require "limit_fetch_bench/trickle"
require "limit_fetch_bench/plan"
require "limit_fetch_bench/rate_progress"
require "limit_fetch_bench/fair_progress"
require "limit_fetch_bench/progress"
require "limit_fetch_bench/limit_check"
require "limit_fetch_bench/rate_window"
require "limit_fetch_bench/summary_figures"
require "limit_fetch_bench/rate_openings_summary"
require "limit_fetch_bench/summary"
require "limit_fetch_bench/markdown"
require "limit_fetch_bench/runner"
