# frozen_string_literal: true

require_relative "chaos_job"

# A ChaosJob whose class's CLASS_LIMIT slots are shared among its tenants
# with work (`fair:`, the tenant its third argument): on queue f, pushed
# with skewed backlogs (PUSHES: one tenant gets most of the jobs), so that
# the class is full and its tenants wait their turns all the time. Its
# slots must never run more than CLASS_LIMIT at once, whoever holds them.
# More tenants than a turn looks at (the 4 holding the fewest slots), so
# that turns pass over some and those that leave the waiting set leave it
# from anywhere in it.
class FairChaosJob < ChaosJob
  QUEUES = %w[f].freeze
  # tenant => its share of the class's pushes.
  PUSHES = {"big" => 12, "mid" => 4, "t1" => 1, "t2" => 1, "t3" => 1, "t4" => 1}.freeze
  TENANTS = PUSHES.keys.freeze
  CLASS_LIMIT = 4

  sidekiq_options queue: QUEUES.first,
    limit_fetch: {concurrency: CLASS_LIMIT, fair: ->(_queue, _millis, tenant) { tenant }}
end
