# frozen_string_literal: true

require_relative "chaos_job"

# A ChaosJob with a rate of its class and nothing else (no concurrency):
# at most LIMIT starts in any window of PERIOD seconds, counted at the
# fetch, across all processes. bin/chaos keeps more of its jobs waiting on
# queue r than that lets start, so that some are parked behind the rate
# all the time. It has no tenants: its jobs are pushed without one.
class RatedChaosJob < ChaosJob
  QUEUES = %w[r].freeze
  TENANTS = [].freeze
  LIMIT = 15
  PERIOD = 1

  sidekiq_options queue: QUEUES.first, limit_fetch: {rate: {limit: LIMIT, period: PERIOD}}
end
