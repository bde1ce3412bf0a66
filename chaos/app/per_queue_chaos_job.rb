# frozen_string_literal: true

require_relative "chaos_job"

# A ChaosJob whose tenants' slots are per queue (`per_queue: true`): pushed
# to queues p and q, each tenant may run 1 job in each at once, so 2 across
# the two.
class PerQueueChaosJob < ChaosJob
  QUEUES = %w[p q].freeze
  TENANTS = %w[t1 t2].freeze
  TENANT_LIMIT = 1

  sidekiq_options queue: QUEUES.first,
    limit_fetch: {key: ->(_queue, _millis, tenant) { tenant }, concurrency: TENANT_LIMIT, per_queue: true}
end
