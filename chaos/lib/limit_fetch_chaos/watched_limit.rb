# frozen_string_literal: true

module LimitFetchChaos
  # Each job limit the chaos app's jobs carry, named as the gem names it
  # (written out here, not asked of the gem, so that a wrong id shows): the
  # queues, tenant and class of the runs that count for it (any tenant, any
  # class when nil) and its limit when none is stored. The classes whose
  # jobs carry them are LIMITED. A fair class's tenant (FAIR) holds no limit
  # of its own: it is held to its class's, whose slots it shares (`fair`:
  # that WatchedLimit; the fair queue's likewise).
  WatchedLimit = Data.define(:id, :queues, :tenant, :limit, :job_class, :fair) do
    def initialize(job_class: nil, fair: nil, **)
      super
    end

    def self.all
      [new(id: "class:KeyedChaosJob", queues: KeyedChaosJob::QUEUES, tenant: nil, limit: KeyedChaosJob::CLASS_LIMIT),
       *keys("KeyedChaosJob", KeyedChaosJob),
       *keys("BackingOffChaosJob", BackingOffChaosJob),
       *keys(GroupedChaosJob::GROUP, GroupedChaosJob),
       *PerQueueChaosJob::QUEUES.flat_map { keys("PerQueueChaosJob@#{_1}", PerQueueChaosJob, queues: [_1]) },
       *keys("DiscardChaosJob", DiscardChaosJob), *FAIR.flat_map { fair(_1) }, *fair_queue]
    end

    # The fair queue's slots (any class, any tenant: its job limit, as the
    # gem names it), each key of its keyed class, and its keyless class,
    # whose jobs' tenant is their class, held to the queue's slots.
    def self.fair_queue
      queues = FairQueueChaosJob::QUEUES
      limit = FairQueueChaosJob::FAIR_LIMIT
      fair = new(id: "queue:#{FairQueueChaosJob::QUEUE}", queues:, tenant: nil, limit:)
      [fair, *keys("FairQueueChaosJob", FairQueueChaosJob, fair:),
       new(id: "class:#{KeylessFairQueueChaosJob}", queues:, tenant: nil, limit:,
         job_class: KeylessFairQueueChaosJob.name, fair:)]
    end

    # A fair class's limit and each of its tenants', held to the class's.
    def self.fair(job_class)
      limit = job_class::CLASS_LIMIT
      fair = new(id: "class:#{job_class}", queues: job_class::QUEUES, tenant: nil, limit:, job_class: job_class.name)
      tenants = job_class::TENANTS.map do |tenant|
        new(id: "key:#{job_class}##{tenant}", queues: job_class::QUEUES, tenant:, limit:, job_class: job_class.name,
          fair:)
      end
      [fair, *tenants]
    end

    def self.keys(scope, job_class, queues: job_class::QUEUES, fair: nil)
      job_class::TENANTS.map do |tenant|
        new(id: "key:#{scope}##{tenant}", queues: queues, tenant: tenant, limit: job_class::TENANT_LIMIT, fair:)
      end
    end

    # Those whose jobs wait parked at their limit (all but DiscardChaosJob's).
    def self.parking = all.reject { _1.queues == DiscardChaosJob::QUEUES }

    def runs_of(runs) = runs.select { of?(_1) }

    # The runs whose slots its jobs wait for: its own, and a fair tenant's
    # group's (its jobs wait their turn while the group's slots are held,
    # by a frozen process's runs too, until its reap).
    def awaited_runs(runs) = runs.select { of?(_1) || fair&.of?(_1) }

    def of?(run)
      queues.include?(run.queue) && [tenant, job_class].zip([run.tenant, run.job_class]).all? do |own, its|
        own.nil? || own == its
      end
    end

    def parked_key = KEYS.parked(id)
  end

  # The classes whose slots are shared among their tenants (`fair:`).
  FAIR = [FairChaosJob, WeightedFairChaosJob].freeze
  # The classes whose jobs carry job limits (concurrency, or a rate:
  # RatedLimit), each pushed by class to its QUEUES with one of its TENANTS
  # (none if it has none); and the fair queue's, one of which carries none
  # when pushed (CARRY_NONE: the fetch gives its jobs their share).
  LIMITED = [KeyedChaosJob, BackingOffChaosJob, GroupedChaosJob, CoGroupedChaosJob, PerQueueChaosJob, DiscardChaosJob,
             RatedChaosJob, TenantRatedChaosJob, LeasedChaosJob, *FAIR, FairQueueChaosJob,
             KeylessFairQueueChaosJob].freeze
  CARRY_NONE = [KeylessFairQueueChaosJob.name].freeze
end
