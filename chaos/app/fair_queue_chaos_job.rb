# frozen_string_literal: true

require_relative "chaos_job"

# A ChaosJob of the fair queue e (`fair_limits:` in both configs): the
# queue's FAIR_LIMIT slots are shared among the tenants of its jobs, this
# class's keys (its third argument; PUSHES: one tenant gets most of them)
# and, for KeylessFairQueueChaosJob's jobs, which carry no key, their class.
# Each key is held to TENANT_LIMIT besides, under the queue's slots, so
# that a tenant alone leaves a slot to the others. The queue must never run
# more than FAIR_LIMIT at once, whoever holds its slots, nor a key more
# than TENANT_LIMIT.
class FairQueueChaosJob < ChaosJob
  QUEUE = "e"
  QUEUES = [QUEUE].freeze
  FAIR_LIMIT = 3
  # tenant => its share of the class's pushes.
  PUSHES = {"big" => 6, "t1" => 1, "t2" => 1}.freeze
  TENANTS = PUSHES.keys.freeze
  TENANT_LIMIT = 2

  sidekiq_options queue: QUEUE,
    limit_fetch: {key: ->(_queue, _millis, tenant) { tenant }, concurrency: TENANT_LIMIT}
end
