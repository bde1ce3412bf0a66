# frozen_string_literal: true

require_relative "rated_chaos_job"

# A ChaosJob with a rate per tenant (its third argument) and nothing else:
# each tenant's key has a window of its own, at most LIMIT starts in any
# PERIOD seconds, and no concurrency limit (none is given beside the
# rate). On queue r beside RatedChaosJob, a few tenants, so that each
# one's jobs are parked behind its rate all the time.
class TenantRatedChaosJob < ChaosJob
  QUEUES = RatedChaosJob::QUEUES
  TENANTS = %w[t1 t2 t3].freeze
  LIMIT = 5
  PERIOD = 1

  sidekiq_options queue: QUEUES.first,
    limit_fetch: {key: ->(_queue, _millis, tenant) { tenant }, rate: {limit: LIMIT, period: PERIOD}}
end
