# frozen_string_literal: true

require_relative "chaos_job"

# A ChaosJob whose tenants' slots (1 each) are shared with CoGroupedChaosJob's
# through their `group:`: both run on queue g, and a tenant must never run
# more than 1 job of the two classes at once. The TUNED tenant's limit is
# changed while jobs run (chaos/app/tune.rb, driven by bin/chaos's Tuner).
class GroupedChaosJob < ChaosJob
  GROUP = "chaos_tenants"
  QUEUES = %w[g].freeze
  TENANTS = %w[t1 t2 hot].freeze
  TENANT_LIMIT = 1
  TUNED = "hot"

  sidekiq_options queue: QUEUES.first,
    limit_fetch: {key: ->(_queue, _millis, tenant) { tenant }, concurrency: TENANT_LIMIT, group: GROUP}
end
