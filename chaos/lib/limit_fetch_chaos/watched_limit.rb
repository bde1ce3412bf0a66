# frozen_string_literal: true

module LimitFetchChaos
  # Each job limit the chaos app's jobs carry, named as the gem names it
  # (written out here, not asked of the gem, so that a wrong id shows): the
  # queues and tenant of the runs that count for it (any tenant when nil)
  # and its limit when none is stored. The classes whose jobs carry them
  # are LIMITED.
  WatchedLimit = Data.define(:id, :queues, :tenant, :limit) do
    def self.all
      [new(id: "class:KeyedChaosJob", queues: KeyedChaosJob::QUEUES, tenant: nil, limit: KeyedChaosJob::CLASS_LIMIT),
       *keys("KeyedChaosJob", KeyedChaosJob),
       *keys("BackingOffChaosJob", BackingOffChaosJob),
       *keys(GroupedChaosJob::GROUP, GroupedChaosJob),
       *PerQueueChaosJob::QUEUES.flat_map { keys("PerQueueChaosJob@#{_1}", PerQueueChaosJob, queues: [_1]) },
       *keys("DiscardChaosJob", DiscardChaosJob)]
    end

    def self.keys(scope, job_class, queues: job_class::QUEUES)
      job_class::TENANTS.map do |tenant|
        new(id: "key:#{scope}##{tenant}", queues: queues, tenant: tenant, limit: job_class::TENANT_LIMIT)
      end
    end

    # Those whose jobs wait parked at their limit (all but DiscardChaosJob's).
    def self.parking = all.reject { _1.queues == DiscardChaosJob::QUEUES }

    def runs_of(runs) = runs.select { queues.include?(_1.queue) && (tenant.nil? || _1.tenant == tenant) }

    def parked_key = KEYS.parked(id)
  end

  # The classes whose jobs carry job limits (concurrency, or a rate:
  # RatedLimit), each pushed by class to its QUEUES with one of its TENANTS
  # (none if it has none).
  LIMITED = [KeyedChaosJob, BackingOffChaosJob, GroupedChaosJob, CoGroupedChaosJob, PerQueueChaosJob, DiscardChaosJob,
             RatedChaosJob, TenantRatedChaosJob].freeze
end
