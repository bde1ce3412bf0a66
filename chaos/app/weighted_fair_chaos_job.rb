# frozen_string_literal: true

require_relative "fair_chaos_job"

# A ChaosJob whose class's slots are shared among its tenants with work by
# weight (`fair: {by:, weight:}`): gold's WEIGHTS 3, the others' 1. On
# queue f beside FairChaosJob, its own slots (CLASS_LIMIT), the weighted
# tenant pushed least (PUSHES), so that the others' backlogs stand before
# its jobs.
class WeightedFairChaosJob < ChaosJob
  QUEUES = FairChaosJob::QUEUES
  PUSHES = {"gold" => 1, "t1" => 3, "t2" => 3}.freeze
  TENANTS = PUSHES.keys.freeze
  WEIGHTS = {"gold" => 3}.freeze
  CLASS_LIMIT = 5

  sidekiq_options queue: QUEUES.first,
    limit_fetch: {concurrency: CLASS_LIMIT,
                  fair: {by: ->(_queue, _millis, tenant) { tenant },
                         weight: ->(_queue, _millis, tenant) { WEIGHTS.fetch(tenant, 1) }}}
end
