# frozen_string_literal: true

module LimitFetchBench
  # The rate section of the Markdown report (RateSummary, RateTable): the
  # fetch cost of a rate that never binds, a hot key's backlog parked behind
  # its rate while other tenants run (against a reschedule-based limiter),
  # and an idle process whose only work is jobs parked behind a rate
  # (RateIdleMarkdown).
  class RateMarkdown
    THROUGHPUT_TEXT =
      "%<jobs>d no-op jobs per run, pushed before the start through the gem's client middleware, timed until the " \
      "last is done: the same jobs under a class rate of %<rate>s, or their queue's (`:rates`), far above any " \
      "throughput here, so that every job is taken and every start counted; with no limit; and on BasicFetch. " \
      "× no limit = the rated variant's median over no limit's (of jobs/s; of the costs per job: lower is " \
      "better); × BasicFetch as in the throughput section. Process CPU: the Sidekiq process's (every thread's: " \
      "Ruby's and the Rust core's); Redis CPU: INFO cpu, user + sys; Redis ceiling = 10⁶ / Redis CPU µs per job. " \
      "Starts counted: the members of the rate's starts set once the run is done (its period outlasts the run)."

    HOT_TEXT =
      "%<hot>d no-op jobs of one tenant queued ahead of %<cold>d jobs of %<tenants>d other tenants (%<each>d " \
      "each, interleaved) in one queue, pushed at once into an embedded Sidekiq (concurrency 10) idle on the " \
      "empty queue, timed from the start of the push (%<push>s s, median) until every job ran. The gem: a rate " \
      "per tenant of %<rate>s (`key:` and `rate:`), the hot tenant's jobs over it parked until its window " \
      "opens. The limiter: BasicFetch with no limits and a server middleware that counts a tenant's starts in a " \
      "fixed window (a Redis counter per tenant and %<period>s s, INCR, EXPIRE set by the first) and reschedules " \
      "a job over %<limit>d 1 s later (seed 004's way; Sidekiq's scheduled poller looking every 0.5–1.5 s from " \
      "the start). First start: of each other tenant's first job, from the start of the push (p50/p99 over all " \
      "runs' tenants). Hot backlog: its last start from the start of the push, against the least the rate " \
      "allows, (⌈jobs / limit⌉ − 1) periods (×: the median over it). Most hot starts within any window of " \
      "the period: as the gem's rate counted them (its starts set in Redis, sampled throughout: Redis's clock, " \
      "the limit check) and as seen from inside the jobs (a job starts after its fetch, by a few ms more for " \
      "the last of a window's burst, so the latter can count a window's last starts with the next one's first; " \
      "fixed windows let the limiter start up to twice its limit across a window's edge). Per executed job: " \
      "Redis commands (INFO commandstats, the sampler's ZRANGE left out), client round trips, the Sidekiq " \
      "process's CPU and Redis CPU (medians)."

    def initialize(rate, options)
      @rate = rate
      @options = options
    end

    def render
      [throughput, hot, (RateIdleMarkdown.new(@rate["idle"], @options).render if @rate["idle"])]
        .compact.join("\n\n")
    end

    private

    def throughput
      rows = @rate["throughput"]
      return nil if rows.nil? || rows.empty?

      ["## Rates: the fetch cost of a rate that never binds", "",
       format(THROUGHPUT_TEXT, jobs: @options["rate_jobs"], rate: RateVariants.rate_text(RateVariants::CLASS_RATE)), "",
       RateTable.throughput(rows)].join("\n")
    end

    def hot
      rows = @rate["hot"]
      return nil if rows.nil? || rows.empty?

      ["## Rates: a hot key's backlog behind its rate", "", hot_text(rows), "", RateTable.hot(rows)].join("\n")
    end

    def hot_text(rows)
      limit, period = RateVariants::HOT_RATE
      push = rows.values.filter_map { _1["push_seconds"] }.max
      format(HOT_TEXT, hot: @options["rate_hot_jobs"], cold: KeyedVariants::COLD_JOBS,
        tenants: KeyedVariants::COLD_TENANTS, each: KeyedVariants::COLD_PER_TENANT, push: Table.num(push, "%.3f"),
        rate: RateVariants.rate_text(RateVariants::HOT_RATE), period: period, limit: limit)
    end
  end
end
