# frozen_string_literal: true

require_relative "grouped_chaos_job"

# Another class (not a subclass) in GroupedChaosJob's group, on the same
# queue and tenants: its keys are the group's, so the two share each
# tenant's slots.
class CoGroupedChaosJob < ChaosJob
  QUEUES = GroupedChaosJob::QUEUES
  TENANTS = GroupedChaosJob::TENANTS

  sidekiq_options queue: QUEUES.first,
    limit_fetch: {key: ->(_queue, _millis, tenant) { tenant }, concurrency: GroupedChaosJob::TENANT_LIMIT,
                  group: GroupedChaosJob::GROUP}
end
