# frozen_string_literal: true

require_relative "chaos_job"

# A ChaosJob with a rate of its class large enough to be leased: at most
# LIMIT starts in any window of PERIOD seconds, above the 64 a period below
# which the gem never leases (src/lua/lease.lua), so that a processor's run
# of its jobs is handed over on leased starts, several at once while the
# window holds fewer than LIMIT - 64, one at a time nearer its limit. And
# low enough that its floods reach it on a loaded machine: beside
# bin/test's other jobs, a run's never reached 200 (36 jobs a second in
# all), nor 128 (its most in a second: 125).
# Its jobs work MILLIS ms (0-2), short enough that a thread spends a lease
# of several starts within its span (3 ms a start). They run in a capsule
# of their own (app.rb's "leased", queue l alone): a hand-over takes the
# next job of the fetch's first queue only. bin/chaos feeds queue l in
# floods, in turn with the queues of the other rates and of the back-offs
# (LimitFetchChaos::Turns): each flood begins in an empty window with no job
# parked behind any rate (none is handed over while some are due), where
# leases grow to many starts, and goes on at the rate, its jobs parked
# behind it.
#
# CONCURRENCY never binds (the capsule has 3 threads a process): declared,
# it makes the rate's hand-over read its own parked list (a rate declared
# alone is a bare one, whose thread leaves its run to the script for a
# second once it saw jobs parked behind any rate: src/capsule/hand_over/
# hold.rs), so that its run is handed over again as soon as its own jobs
# parked behind its rate are gone.
class LeasedChaosJob < ChaosJob
  QUEUES = %w[l].freeze
  TENANTS = [].freeze
  LIMIT = 100
  PERIOD = 1
  CONCURRENCY = 100
  MILLIS = (0..2)

  sidekiq_options queue: QUEUES.first, limit_fetch: {rate: {limit: LIMIT, period: PERIOD}, concurrency: CONCURRENCY}
end
