# frozen_string_literal: true

require_relative "fair_queue_chaos_job"

# A ChaosJob of the fair queue e (FairQueueChaosJob's) with no job limit at
# all: pushed, it carries none; the fetch gives it its share of the queue's
# slots, its class its tenant.
class KeylessFairQueueChaosJob < ChaosJob
  QUEUES = FairQueueChaosJob::QUEUES
  TENANTS = [].freeze

  sidekiq_options queue: QUEUES.first
end
