# frozen_string_literal: true

require "sidekiq"
require_relative "chaos_job"

# A ChaosJob whose tenant's limit adapts (`concurrency: 1..3` per tenant) and
# that backs it off now and then, as a job hearing "429, retry after 0.3 s"
# would (one run in BACK_OFF_ONE_IN): the run raises before it writes the
# ledger, so that a back-off leaves nothing but its next run, which counts.
# On queue o, a few tenants, so that each one's limit is reached, grows and
# shrinks all the time.
class BackingOffChaosJob < ChaosJob
  QUEUES = %w[o].freeze
  TENANTS = %w[t1 t2].freeze
  TENANT_LIMIT = 3
  BACK_OFF_ONE_IN = 8
  RETRY_AFTER = 0.3

  sidekiq_options queue: QUEUES.first,
    limit_fetch: {key: ->(_queue, _millis, tenant) { tenant }, concurrency: 1..TENANT_LIMIT}

  def perform(queue, millis, tenant = nil)
    raise Sidekiq::LimitFetch::BackOff.new(retry_after: RETRY_AFTER) if rand(BACK_OFF_ONE_IN).zero?

    super
  end
end
