# frozen_string_literal: true

require_relative "chaos_job"

# A ChaosJob dropped at fetch when its tenant already runs one
# (`on_limit: :discard`, seed 002's lock around an ID): on queue d, each of
# its jobs either runs or is discarded, logged and counted.
class DiscardChaosJob < ChaosJob
  QUEUES = %w[d].freeze
  TENANTS = %w[t1 t2 t3].freeze
  TENANT_LIMIT = 1

  sidekiq_options queue: QUEUES.first,
    limit_fetch: {key: ->(_queue, _millis, tenant) { tenant }, concurrency: TENANT_LIMIT, on_limit: :discard}
end
