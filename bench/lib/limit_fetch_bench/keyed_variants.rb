# frozen_string_literal: true

module LimitFetchBench
  # The variants of the keyed section (bin/bench --only keyed), by workload:
  # - distinct: the same no-op jobs with a distinct key each (limit 1 per
  #   key: never contended) or with no key, both on LimitFetch;
  # - hot: one tenant's backlog (key limit 2) queued ahead of 100 other
  #   tenants' jobs, with the gem's job limits, without (no key; the same no
  #   key under a queue limit of 2, the hot tenant's cap laid on the whole
  #   queue), and the two seeds' approaches on BasicFetch with no job
  #   limits: seed 004's reschedule and seed 002's lock-and-exit;
  # - keys: 10,000 distinct keys, what they leave in Redis once done.
  # The gem's variants run every round; the seeds' and the keys' in the
  # first only (ONCE).
  module KeyedVariants
    HOT_TENANT = "hot"
    COLD_TENANTS = 100
    COLD_PER_TENANT = 10
    COLD_JOBS = COLD_TENANTS * COLD_PER_TENANT

    DEFAULTS = {limit: nil, concurrency: 10, job_seconds: 0, baseline: nil}.freeze

    # `options`: keyed, limit, guard, baseline.
    def self.variant(key, label, fetch, workload, **options)
      Variant.new(key:, label:, fetch:, workload:, **DEFAULTS.merge(options))
    end

    ALL = [
      variant("keyed_none", "LimitFetch, no key", :limit_fetch, :distinct),
      variant("keyed_distinct", "LimitFetch, a distinct key per job (limit 1)", :limit_fetch, :distinct,
        keyed: true, baseline: "keyed_none"),
      variant("hot_gem", "LimitFetch, key limit 2 (parking)", :limit_fetch, :hot, keyed: true),
      variant("hot_none", "LimitFetch, no key (no limit)", :limit_fetch, :hot),
      variant("hot_queue2", "LimitFetch, no key, queue limit 2 (the cap on the whole queue)", :limit_fetch, :hot,
        limit: 2),
      variant("hot_reschedule", "BasicFetch + seed 004: reschedule 1 s later at the limit (2)", :basic, :hot,
        guard: :reschedule),
      variant("hot_lock", "BasicFetch + seed 002: lock per tenant, exit if taken (limit 1)", :basic, :hot,
        guard: :lock),
      variant("keys", "LimitFetch, 10,000 distinct keys", :limit_fetch, :keys, keyed: true)
    ].to_h { [_1.key, _1] }.freeze

    DISTINCT = %w[keyed_none keyed_distinct].freeze
    HOT = %w[hot_gem hot_none hot_queue2].freeze
    SEEDS = %w[hot_reschedule hot_lock].freeze
    # Run in the first round only: the seeds, slow and not the gem (the
    # reschedule takes minutes at full size), and the count of keys left,
    # which varies not.
    ONCE = (SEEDS + %w[keys]).freeze
  end
end
