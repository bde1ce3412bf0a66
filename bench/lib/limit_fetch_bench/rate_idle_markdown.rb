# frozen_string_literal: true

module LimitFetchBench
  # The rate section's idle part of the Markdown report (RateIdleSummary):
  # waiting with jobs parked behind a rate against the blocking wait, and
  # the pickup latency as windows open.
  class RateIdleMarkdown
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

    def initialize(row, options)
      @row = row
      @options = options
    end

    def render
      ["## Rates: idle with jobs parked behind a rate", "", idle_text, "", RateTable.wait(@row), "",
       "#{verdict} #{mixes(@row["command_mix"])}", pickup].compact.join("\n")
    end

    private

    def pickup
      return nil unless @row["latency_ms"]

      ["", format(PICKUP_TEXT, openings: @options["rate_openings"],
        rate: RateVariants.rate_text(RateVariants::PACED_RATE)), "", RateTable.pickup(@row)].join("\n")
    end

    # Whether waiting with jobs parked cost no more than the blocking wait.
    def verdict
      no_more = @row["no_more_than_blocking"]
      return "Waiting with jobs parked and the blocking wait did not both run: no comparison." if no_more.nil?

      pooled = @row["pooled_commands_per_s"]
      ratio = @row["commands_ratio"] ? " (#{Table.ratio(@row["commands_ratio"])})" : ""
      format("With jobs parked, %<p>.2f Redis commands/s over all runs against %<b>.2f for the blocking " \
             "wait%<r>s: no more than the blocking wait — %<v>s.%<late>s",
        p: pooled["parked"], b: pooled["blocking"], r: ratio, v: no_more ? "yes" : "**no**", late: late)
    end

    def late
      seconds = @row["late_max"]
      return "" unless seconds&.>(0.01)

      format(" (A window started up to %.2f s late: a run settled late, so heartbeats may not fall alike.)", seconds)
    end

    def mixes(mix)
      "Commands per second, over all runs: nothing parked: #{RateTable.mix(mix["blocking"])}; parked: " \
        "#{RateTable.mix(mix["parked"])}."
    end

    def idle_text
      format(IDLE_TEXT, threads: @row["concurrency"], seconds: @options["rate_idle_seconds"],
        settle: RateVariants::IDLE_SETTLE, parked: RateVariants::PARKED_JOBS,
        rate: RateVariants.rate_text(RateVariants::PARKED_RATE), left: @row["parked_jobs_expected"])
    end
  end
end
