# frozen_string_literal: true

module LimitFetchBench
  # The keyed section of the Markdown report: distinct keys against no key,
  # the hot-key workload (the gem, without job limits, and the seeds'
  # approaches), and what distinct keys leave in Redis. With --baseline, the
  # twins of the gem's variants and each variant's ratios to its twin, if
  # the baseline had job limits (else a note that it had none).
  class KeyedMarkdown
    HOT_TEXT =
      "%<hot>d no-op jobs of one tenant (key limit 2) queued ahead of %<cold>d " \
      "jobs of %<tenants>d other tenants (%<each>d each, " \
      "interleaved) in one queue, concurrency 10, timed until every job ran or was dropped. First start: of each " \
      "other tenant's first job, from the start of the run (p50/p99 over all runs' tenants). × = the variant's " \
      "throughput (jobs / time until all done, medians) over that of the same jobs with no key, and with no key " \
      "under a queue limit of 2 (the hot tenant's cap laid on the whole queue: what 2 slots take for its " \
      "jobs). The seeds' approaches run on BasicFetch with no job limits: seed 004 reschedules a job at its " \
      "tenant's limit (a counter per tenant, INCR/DECR) 1 s later, not a minute, with Sidekiq's scheduled poller " \
      "looking every 0.5–1.5 s from the start, else the wait for the poller is all one would see; seed 002 " \
      "drops a job whose tenant's lock (SET NX) is taken. Per executed job: Redis commands (INFO commandstats, " \
      "the parked-list sampler's LLEN left out), client round trips, the Sidekiq process's CPU (every thread's: " \
      "Ruby's and the Rust core's) and Redis CPU, each CPU figure followed by its ratio to that of the same jobs " \
      "with no key (medians; lower is better)."

    DISTINCT_TEXT =
      "%<jobs>d no-op jobs per run, each with a key of its own (limit 1 per key: never contended) or with none, " \
      "both on LimitFetch, alternated; × = ratio to the jobs with no key, as is the ratio after each CPU figure " \
      "and the Redis ceiling. Process CPU: the Sidekiq process's (every thread's: Ruby's and the Rust core's); " \
      "Redis ceiling = 10⁶ / Redis CPU µs per job, the jobs per second one Redis core (serving the whole fleet) " \
      "can serve."

    REV_TEXT =
      "× @%<rev>s = this checkout's figure over its twin's: %<throughput>s, then%<first>s Redis commands (cmds), " \
      "round trips (RT), process CPU and Redis CPU per %<job>s (medians; lower is better). The twins' × are to the " \
      "baseline's own variants."

    # `baseline`: the summary's meta "baseline", or nil.
    def initialize(keyed, options, baseline = nil)
      @keyed = keyed
      @options = options
      @baseline = baseline
      @rev = baseline["rev"] if baseline && baseline["job_limits"]
    end

    def render = [no_twins, distinct, hot, keys].compact.join("\n\n")

    private

    def no_twins
      return nil if @baseline.nil? || @rev

      "The keyed variants have no twins: the baseline's gem (#{@baseline["rev"]}) has no job limits."
    end

    def rev_text(throughput, job, first = "")
      @rev ? " #{format(REV_TEXT, rev: @rev, throughput: throughput, first: first, job: job)}" : ""
    end

    def distinct
      return nil if @keyed["distinct"].empty?

      ["## Job limits: a distinct key per job", "",
       format(DISTINCT_TEXT, jobs: @options["jobs"]) + rev_text("jobs/s", "job"), "",
       KeyedTable.distinct(@keyed["distinct"], @rev)].join("\n")
    end

    def hot
      return nil if @keyed["hot"].empty?

      ["## Job limits: a hot key", "", hot_text + hot_rev_text, "", KeyedTable.hot(@keyed["hot"], @rev)]
        .join("\n")
    end

    def hot_rev_text
      rev_text("throughput (jobs / time until all done)", "executed job", " the other tenants' first start p50 / p99,")
    end

    def hot_text
      format(HOT_TEXT, hot: @options["hot_jobs"], cold: KeyedVariants::COLD_JOBS, tenants: KeyedVariants::COLD_TENANTS,
        each: KeyedVariants::COLD_PER_TENANT)
    end

    def keys
      row = @keyed["keys"]
      return nil unless row

      text = "An embedded LimitFetch Sidekiq on the empty queue; Redis read before #{row["jobs"]} jobs with a " \
             "distinct key each were pushed and after they ran (0.5 s after the last). Keys added: #{names(row)}."
      ["## Job limits: #{row["jobs"]} distinct keys, idle", "", text, "", KeyedTable.keys(row)].join("\n")
    end

    def names(row)
      return "none" if row["new_keys"].zero?

      row["new_key_names"].map { "`#{_1}`" }.join(", ") + (row["new_keys"] > 20 ? ", ..." : "")
    end
  end
end
