# frozen_string_literal: true

module LimitFetchChaos
  # What a fair class's (FAIR) tenants got, as the report shows it, not
  # checked (the kills, the outage and the freeze skew any share; its
  # limits are checked as WatchedLimit's, the most of each tenant's runs at
  # once shown with them): per tenant, its jobs pushed and begun, how long
  # they waited from the push to their first start (median, ms; every run
  # counts, a frozen process's woken originals too), how many began while
  # another tenant of the class had LARGE or more jobs waiting (pushed, not
  # yet begun: a tenant's turn comes behind another's backlog), and how
  # many began while every tenant of the class had jobs waiting, with their
  # share of those.
  class FairShares
    LARGE = 10

    # Client middleware (the driver's, after the gem's): notes each FAIR
    # class's push, jid => [tenant (its third argument), wall-clock ns just
    # before the push], in `pushes` (class name => those).
    class Pushes
      include Sidekiq::ClientMiddleware

      def initialize(pushes)
        @pushes = pushes
      end

      def call(_job_class, job, _queue, _redis_pool)
        @pushes[job["class"].to_s]&.store(job["jid"], [job["args"][2], LimitFetchChaos.now_ns])
        yield
      end
    end

    # Of class `name` (its `tenants`); `runs`: every run; `pushed`: the
    # class's, as Pushes notes them.
    def initialize(name, tenants, runs, pushed)
      @tenants = tenants
      @runs = runs.select { _1.job_class == name }
      first = @runs.group_by(&:jid).transform_values { |of_job| of_job.map(&:start).min }
      @jobs = pushed.map { |jid, (tenant, at)| {tenant:, pushed: at, started: first[jid]} }
    end

    def to_h
      tally = sweep
      all_waiting = tally.values.sum { _1[:all_waiting] }
      @tenants.to_h do |tenant|
        seen = tally[tenant]
        share = (seen[:all_waiting].fdiv(all_waiting) * 100).round unless all_waiting.zero?
        [tenant, {**tenant_h(tenant), **seen, all_waiting_share: share}]
      end
    end

    private

    def tenant_h(tenant)
      jobs = @jobs.select { _1[:tenant] == tenant }
      {pushed: jobs.size, begun: jobs.count { _1[:started] }, wait_ms: median_wait(jobs)}
    end

    # Per tenant, its first starts while another had LARGE waiting, and
    # while every tenant had some: a walk through the pushes and first
    # starts in time order, a push before a start at the same instant.
    def sweep
      waiting = Hash.new(0)
      tally = @tenants.to_h { [_1, {behind_large: 0, all_waiting: 0}] }
      events.each do |_at, start, tenant|
        next waiting[tenant] += 1 if start.zero?

        note(tally.fetch(tenant), waiting, tenant)
        waiting[tenant] -= 1
      end
      tally
    end

    def note(seen, waiting, tenant)
      seen[:behind_large] += 1 if waiting.any? { |other, count| other != tenant && count >= LARGE }
      seen[:all_waiting] += 1 if @tenants.all? { waiting[_1].positive? }
    end

    # [at, 0 (a push) or 1 (a first start), tenant], in order.
    def events
      @jobs.flat_map { |job| [[job[:pushed], 0, job[:tenant]], job[:started] && [job[:started], 1, job[:tenant]]] }
           .compact.sort_by { |at, start, _| [at, start] }
    end

    def median_wait(jobs)
      waits = jobs.filter_map { (_1[:started] - _1[:pushed]) / 1e6 if _1[:started] }.sort
      waits.empty? ? nil : waits[waits.size / 2].round
    end
  end
end
