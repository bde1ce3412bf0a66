# frozen_string_literal: true

module LimitFetchChaos
  # Room below which the gem grants a lease of one start at most
  # (LEASE_SCARCE in src/lua/prelude/rates.lua): a lease of k starts is
  # granted only where, k counted, the window has that much room left, and
  # half its limit.
  LEASE_SCARCE = 64

  # Each rate the chaos app's jobs carry, named as the gem names its job
  # limit (written out here, not asked of the gem, so that a wrong id
  # shows): the class (a name) and tenant of the runs that count for it (any
  # tenant when nil), and at most `limit` starts in any window of `period`
  # seconds. None has a concurrency limit that binds beside it
  # (LeasedChaosJob's is above its capsule's threads): nothing but the rate
  # (and the faults) keeps its parked jobs waiting, so a wait much longer
  # than its period is a stall (Stalls.rate_lines).
  RatedLimit = Data.define(:id, :job_class, :tenant, :limit, :period) do
    def self.all
      [of(RatedChaosJob, "class:RatedChaosJob"),
       *TenantRatedChaosJob::TENANTS.map { of(TenantRatedChaosJob, "key:TenantRatedChaosJob##{_1}", tenant: _1) },
       of(LeasedChaosJob, "class:LeasedChaosJob")]
    end

    def self.of(job_class, id, tenant: nil)
      new(id: id, job_class: job_class.name, tenant: tenant, limit: job_class::LIMIT, period: job_class::PERIOD)
    end

    # The queues of the rated classes: with --jobs they have no share of
    # them, and are kept Plan#backlog deep while the others are fed
    # (Plan#quota), so that their rates bind from the first push to the last
    # (in turns: Plan#feeds?).
    def self.queues = all.flat_map(&:queues).uniq

    # Seconds after its last start that an idle rate's window (its starts)
    # has expired, at most.
    def self.longest_period = all.map(&:period).max

    def queues = Object.const_get(job_class)::QUEUES

    # The runs that count for it: its class's (the other rated class shares
    # its queue), of its tenant.
    def runs_of(runs) = runs.select { _1.job_class == job_class && (tenant.nil? || _1.tenant == tenant) }

    def period_ns = (period * 1e9).to_i

    # Whether the gem may lease it more than one start at once: 2 from an
    # empty window leave room for LEASE_SCARCE and for half the limit.
    def leased? = limit - 2 >= [LEASE_SCARCE, limit / 2.0].max

    def parked_key = KEYS.parked(id)
  end
end
