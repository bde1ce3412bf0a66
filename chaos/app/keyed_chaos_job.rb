# frozen_string_literal: true

require_relative "chaos_job"

# A ChaosJob with job limits: at most 1 running at once per tenant (its third
# argument) and 3 of the class, across all processes. bin/chaos pushes it to
# queue k with a handful of tenants, so that jobs are parked all the time.
class KeyedChaosJob < ChaosJob
  QUEUE = "k"
  QUEUES = [QUEUE].freeze
  TENANTS = %w[t1 t2 t3 t4 t5].freeze
  TENANT_LIMIT = 1
  CLASS_LIMIT = 3

  sidekiq_options queue: QUEUE,
    limit_fetch: {key: ->(_queue, _millis, tenant) { tenant }, concurrency: TENANT_LIMIT,
                  class_concurrency: CLASS_LIMIT}
end
