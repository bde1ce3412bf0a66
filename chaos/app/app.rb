# frozen_string_literal: true

# The app that bin/chaos's Sidekiq processes load (`sidekiq -r ./app.rb`); it
# stands for a Rails app's initializer.
require "sidekiq"
require "sidekiq-limit_fetch"
require_relative "chaos_job"
require_relative "keyed_chaos_job"
require_relative "grouped_chaos_job"
require_relative "co_grouped_chaos_job"
require_relative "per_queue_chaos_job"
require_relative "discard_chaos_job"
require_relative "rated_chaos_job"
require_relative "tenant_rated_chaos_job"
require_relative "leased_chaos_job"
require_relative "backing_off_chaos_job"
require_relative "fair_chaos_job"
require_relative "weighted_fair_chaos_job"
require_relative "fair_queue_chaos_job"
require_relative "keyless_fair_queue_chaos_job"

Sidekiq.configure_server do |config|
  # Short, so that the capsule of a killed process is reaped within seconds
  # (once silent for 4 periods). bin/chaos chooses it (Plan::HEARTBEAT_PERIOD).
  Sidekiq::LimitFetch.configuration[:heartbeat_period] = Float(ENV.fetch("CHAOS_HEARTBEAT_PERIOD"))
  # A kill every 1.5-2.5 s, and a dead capsule's jobs pushed back as a
  # replacement boots (its reaper) about as the next kill falls due: a job
  # taken by the booting process can be killed with it again and again (one
  # job four times in a row, in one run of about forty), which the default
  # (3) sends to the dead set as a poison pill. A run checks that no job is
  # lost; heartbeat_spec checks the poison pill.
  Sidekiq::LimitFetch.configuration[:max_recoveries] = 20
  # Sidekiq's scheduler cleans up once, 0-5 s after boot with this set (else
  # 10-15 s); a Redis error then kills its thread, and the process cannot stop
  # cleanly (Sidekiq 8.1's Poller#terminate re-raises it). bin/chaos takes
  # Redis down only once every process is past that (Plan::SCHEDULER_WAIT).
  config[:poll_interval_average] = 5
  # A capsule whose one thread waits on a queue that never gets a job, so
  # that a fetch is under way, and raises, whenever Redis goes down (the
  # default capsule's threads may all be in jobs then, waiting to write the
  # ledger). Plan::CAPSULES counts it.
  config.capsule("idle") do |capsule|
    capsule.concurrency = 1
    capsule.queues = %w[idle]
  end
  # LeasedChaosJob's capsule: its queue alone, so that it is each fetch's
  # first queue and a thread's run of its jobs is handed over (on leased
  # starts). Plan::CAPSULES counts it.
  config.capsule("leased") do |capsule|
    capsule.concurrency = 3
    capsule.queues = LeasedChaosJob::QUEUES
  end
end
