# frozen_string_literal: true

module LimitFetchBench
  # The rate section of the Markdown report (RateSummary, RateTable): the
  # fetch cost of a rate that never binds, a hot key's backlog parked behind
  # its rate while other tenants run (against a reschedule-based limiter),
  # and an idle process whose only work is jobs parked behind a rate.
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
      "the limit check) and as seen from inside the jobs (a job starts after its fetch, so the latter can " \
      "exceed the limit by a thread's wake-up; fixed windows let the limiter start up to twice its limit " \
      "across a window's edge). Per executed job: Redis commands (INFO commandstats, the sampler's ZRANGE left " \
      "out), client round trips, the Sidekiq process's CPU and Redis CPU (medians)."

    IDLE_TEXT =
      "The same embedded LimitFetch Sidekiq (concurrency %<threads>d) in two variants, each run in a process of " \
      "its own, alternated: into one, %<parked>d jobs are pushed before it starts whose class's rate is " \
      "%<rate>s: the first runs, the other %<left>d are parked behind the rate, whose window opens after the " \
      "run; into the other, one job with no limit, which runs: nothing parked, the blocking wait. Once that job " \
      "is done, both are measured idle for %<seconds>s s from %<settle>s s after their start, so that Sidekiq's " \
      "heartbeat (every 10 s) and the gem's (every 15 s) fall alike in both. Redis commands per second (INFO " \
      "commandstats), process CPU and Redis CPU, medians (min–max) over the runs, and commands per second over " \
      "all runs (all their commands over all their seconds). Waiting with jobs parked should cost no more than " \
      "the blocking wait; a fetcher polling while it waits would show as scripts (fcall) every `fetch_timeout` " \
      "(2 s) or sooner."

    PICKUP_TEXT =
      "Then, in the process with jobs parked, %<openings>d + 1 jobs pushed at once whose class's rate is " \
      "%<rate>s: the first runs, the others are parked and go one by one as the window opens. Pickup: from the " \
      "moment a job's window opened (the start before it, as the fetch counted it in the rate's starts set by " \
      "Redis's clock, plus the period) to its start, read from CLOCK_REALTIME first thing in perform (Redis runs " \
      "on this machine: one clock); percentiles over all runs' openings. Of which until the fetch: from the " \
      "opening to the start the fetch that took the job counted (Redis's clock); the rest is Sidekiq's, from the " \
      "fetch's reply to perform. Redis commands and scripts (FCALL) per opening: over the whole phase (each job " \
      "reads its starts set once: left out). Most starts within a period: by Redis's clock (the limit check)."

    def initialize(rate, options)
      @rate = rate
      @options = options
    end

    def render = [throughput, hot, idle].compact.join("\n\n")

    private

    def throughput
      rows = @rate["throughput"]
      return nil if rows.nil? || rows.empty?

      ["## Rates: the fetch cost of a rate that never binds", "",
       format(THROUGHPUT_TEXT, jobs: @options["jobs"], rate: RateVariants.rate_text(RateVariants::CLASS_RATE)), "",
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

    def idle
      row = @rate["idle"]
      return nil unless row

      ["## Rates: idle with jobs parked behind a rate", "", idle_text(row), "", RateTable.wait(row), "",
       "#{RateTable.verdict(row)} #{mixes(row["command_mix"])}", pickup(row)].compact.join("\n")
    end

    def pickup(row)
      return nil unless row["latency_ms"]

      ["", format(PICKUP_TEXT, openings: @options["rate_openings"],
        rate: RateVariants.rate_text(RateVariants::PACED_RATE)), "", RateTable.pickup(row)].join("\n")
    end

    def mixes(mix)
      "Commands per second, over all runs: nothing parked: #{RateTable.mix(mix["blocking"])}; parked: " \
        "#{RateTable.mix(mix["parked"])}."
    end

    def idle_text(row)
      format(IDLE_TEXT, threads: row["concurrency"], seconds: @options["rate_idle_seconds"],
        settle: RateVariants::IDLE_SETTLE, parked: RateVariants::PARKED_JOBS,
        rate: RateVariants.rate_text(RateVariants::PARKED_RATE), left: row["parked_jobs_expected"])
    end
  end
end
