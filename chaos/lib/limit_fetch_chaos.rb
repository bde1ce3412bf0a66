# frozen_string_literal: true

require "etc"
require "json"
require "sidekiq"
require "sidekiq-limit_fetch"

$LOAD_PATH.unshift(File.expand_path("../../demo/lib", __dir__))
require "limit_fetch_demo"
require_relative "../../tools/lib/limit_fetch_tools/markdown"
%w[keyed_chaos_job backing_off_chaos_job grouped_chaos_job co_grouped_chaos_job per_queue_chaos_job discard_chaos_job
   rated_chaos_job tenant_rated_chaos_job leased_chaos_job fair_chaos_job weighted_fair_chaos_job
   fair_queue_chaos_job keyless_fair_queue_chaos_job].each do |job|
  require_relative "../app/#{job}"
end

# bin/chaos: three Sidekiq processes on a Redis of their own (persisted with
# AOF), fed thousands of short jobs across limited and unlimited queues while
# the driver kill -9s a random process every ~2 s (and starts a replacement),
# takes Redis down once and freezes a process once, each for several
# heartbeat expiries. With --fault, one fault on two processes instead
# (FaultRunner). Afterwards it checks, from a ledger the jobs wrote
# to Redis, that no job was lost, that jobs ran more than once only when
# their process was killed before Redis had their acknowledgement, that no limit was
# exceeded (queue limits, and the job limits the LIMITED classes' jobs
# carry: per tenant, per class, shared by a group, per queue, one changed
# at run time), nor any rate (RatedLimit: of a class, per tenant, and one
# of a class large enough to be leased many starts at once; checked in every
# window from the jobs' own starts and from the gem's count), that every job discarded at
# its limit was counted and logged, and that nothing was left behind in
# Redis.
#
# It reuses bin/demo's pieces (LimitFetchDemo: the app directory) and the
# tools' (LimitFetchTools: child processes, the Redis server).
module LimitFetchChaos
  REPO = LimitFetchDemo::REPO
  ROOT = File.join(REPO, "chaos")
  Failure = LimitFetchDemo::Failure
  # The gem's keys in Redis, named by its data model.
  KEYS = Sidekiq::LimitFetch::Keys
  PREFIX = KEYS::PREFIX

  module_function

  def monotonic = LimitFetchDemo.monotonic

  # Wall-clock nanoseconds, the clock the jobs' ledger entries use.
  def now_ns = Process.clock_gettime(Process::CLOCK_REALTIME, :nanosecond)
end

require_relative "limit_fetch_chaos/options"
require_relative "limit_fetch_chaos/watched_limit"
require_relative "limit_fetch_chaos/rated_limit"
require_relative "limit_fetch_chaos/limit_schedule"
require_relative "limit_fetch_chaos/turns"
require_relative "limit_fetch_chaos/plan"
require_relative "limit_fetch_chaos/capsules"
require_relative "limit_fetch_chaos/fleet"
require_relative "limit_fetch_chaos/feeder"
require_relative "limit_fetch_chaos/frozen"
require_relative "limit_fetch_chaos/freezer"
require_relative "limit_fetch_chaos/mayhem"
require_relative "limit_fetch_chaos/fault_plan"
require_relative "limit_fetch_chaos/fault"
require_relative "limit_fetch_chaos/tuner"
require_relative "limit_fetch_chaos/run"
require_relative "limit_fetch_chaos/concurrency"
require_relative "limit_fetch_chaos/rate_windows"
require_relative "limit_fetch_chaos/append_only_file"
require_relative "limit_fetch_chaos/recorded_starts"
require_relative "limit_fetch_chaos/duplicates"
require_relative "limit_fetch_chaos/discards"
require_relative "limit_fetch_chaos/leftovers"
require_relative "limit_fetch_chaos/stalls"
require_relative "limit_fetch_chaos/limited_checks"
require_relative "limit_fetch_chaos/fair_shares"
require_relative "limit_fetch_chaos/rates_checks"
require_relative "limit_fetch_chaos/checks"
require_relative "limit_fetch_chaos/report"
require_relative "limit_fetch_chaos/environment"
require_relative "limit_fetch_chaos/markdown"
require_relative "limit_fetch_chaos/harness"
require_relative "limit_fetch_chaos/runner"
require_relative "limit_fetch_chaos/fault_checks"
require_relative "limit_fetch_chaos/fault_report"
require_relative "limit_fetch_chaos/fault_runner"
require_relative "limit_fetch_chaos/repeat"
