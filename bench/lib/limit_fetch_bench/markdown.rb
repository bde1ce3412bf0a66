# frozen_string_literal: true

module LimitFetchBench
  # The summary as Markdown: a header with the setup, one table per section,
  # the limit check, and how round trips are counted.
  class Markdown
    CPU_TEXT =
      "CPU per job, medians: process CPU, the Sidekiq process's (every thread's: Ruby's and the Rust core's), " \
      "and Redis CPU (INFO cpu, user + sys), each followed by its ratio to BasicFetch's in this invocation " \
      "(lower is better). Redis ceiling = 10⁶ / Redis CPU µs per job, with its ratio to BasicFetch's: the " \
      "jobs per second one Redis core can serve; one Redis serves the whole fleet, so this is the fleet's " \
      "ceiling from fetch work (fetching and acknowledging)."

    def initialize(summary)
      @summary = summary
      @meta = summary["meta"]
      @rev = @meta.dig("baseline", "rev")
    end

    def render
      [header, throughput("throughput"), throughput("delayed"), idle, fetch_cost, keyed, rate, limits, counting]
        .compact.join("\n\n") << "\n"
    end

    private

    def header
      options = @meta["options"]
      <<~MD.chomp
        # bin/bench: Sidekiq::LimitFetch against BasicFetch

        #{@meta["date"]}, #{@meta["cpus"]} CPUs; #{@meta["ruby"]}; Sidekiq #{@meta["sidekiq"]}; #{@meta["redis"]}; \
        sidekiq-limit_fetch-rs #{@meta["gem"]}. Embedded Sidekiq, concurrency 10 (reference: 5), one queue, \
        logging at WARN. LimitFetch with its defaults: an idle fetch blocks up to `fetch_timeout` (2 s) on the \
        doorbell (`poll_range` #{range(@meta["poll_range"])} s applies only where Redis refuses CLIENT TRACKING). \
        #{options["runs"]} runs of every variant, alternated run by run; medians, (min–max) over the runs; \
        × = ratio to BasicFetch's median from this invocation. Run time #{format("%.0f", @meta["seconds"])} s.#{baseline}
      MD
    end

    def baseline
      return "" unless @rev

      base = @meta["baseline"]
      "\n\nBaseline: the variants marked @#{@rev} load the gem built from `#{base["ref"]}` (#{@rev}, " \
        "\"#{base["subject"]}\"), their runs alternated with this checkout's; × @#{@rev} = this checkout's median " \
        "over theirs (for latency, fetch time and CPU, lower is better); in the throughput tables, of jobs/s, then " \
        "in brackets of process and Redis CPU per job."
    end

    def throughput(section)
      rows = @summary[section]
      return nil if rows.empty?

      [title(section), "", Table.throughput(rows, @rev)].join("\n")
    end

    def title(section)
      options = @meta["options"]
      jobs = section == "delayed" ? options["delayed_jobs"] : options["jobs"]
      text = "## Throughput#{delay_note if section == "delayed"}\n\n#{jobs} no-op jobs per run " \
             "(10 ms variants: #{options["slow_jobs"]} jobs), pushed before the start, timed until the last is done."
      "#{text} #{CPU_TEXT} Slot utilisation (10 ms jobs): jobs running, time-averaged while a backlog exists, " \
        "/ limit (BasicFetch: / concurrency). In flight: from retrieve_work's return to acknowledge; running: " \
        "inside perform."
    end

    def delay_note
      proxy = @meta["proxy"]
      format(" with ~1 ms added round trip (delay proxy for every client: PING %<d>.2f ms direct, %<p>.2f ms " \
             "through it)", d: proxy["direct_rtt_us"] / 1e3, p: proxy["proxied_rtt_us"] / 1e3)
    end

    def idle
      return nil if @summary["idle"].empty?

      ["## Idle: pickup latency and idle cost", "",
       "Single no-op jobs pushed at random 20–80 ms gaps into the empty queue for " \
       "#{@meta["options"]["idle_seconds"]} s per run; latency = job start − push time (p50/p95/p99 over all runs' " \
       "jobs). Idle cost over #{@meta["options"]["idle_seconds"]} s with nothing queued.", "",
       Table.idle(@summary["idle"], @rev)].join("\n")
    end

    def fetch_cost
      return nil if @summary["fetch_cost"].empty?

      ["## Fetch cost", "",
       "`retrieve_work` called directly on a fetcher, #{@meta["options"]["fetch_iterations"]} calls per run; the job " \
       "is acknowledged and pushed back between calls (untimed). µs per call: median of the runs' medians " \
       "(min–max; means and p99 are in latest.json); Redis cmds: commands Redis ran for one fetch (those inside the " \
       "gem's script included); Redis µs: time Redis spent in BRPOP or the gem's FCALL.", "",
       Table.fetch_cost(@summary["fetch_cost"], @rev)].join("\n")
    end

    def keyed
      keyed = @summary["keyed"]
      return nil if keyed.nil? || keyed.empty?

      KeyedMarkdown.new(keyed, @meta["options"], @meta["baseline"]).render
    end

    def rate
      rate = @summary["rate"]
      return nil if rate.nil? || rate.empty?

      RateMarkdown.new(rate, @meta["options"]).render
    end

    def limits
      checks = @summary["limit_checks"]
      bad = checks.reject { _1["ok"] }
      text = bad.empty? ? "All #{checks.size} limited runs stayed within their limit." : exceeded(bad, checks.size)
      "## Limit check\n\n#{text} Checked: the most jobs of the limited queue in flight at once in a run (from " \
        "retrieve_work's return to acknowledge; running jobs are a subset), and for the hot key, its jobs running at " \
        "once (from inside them)#{rates_checked}."
    end

    def rates_checked
      return "" if @summary["rate"].nil? || @summary["rate"].empty?

      "; for rates, the most starts within any window of the period, as the gem counted them (Redis's clock)"
    end

    def exceeded(bad, total)
      runs = bad.map do |check|
        "#{check["section"]} #{check["variant"]} run #{check["round"]}: " \
          "#{check["max_in_flight"] || check["max_running"]}"
      end
      "**#{bad.size} of #{total} limited runs exceeded their limit (#{bad.first["limit"]}):** #{runs.join("; ")}."
    end

    def counting = "## How round trips are counted\n\n#{@meta["round_trip_counting"]}"

    def range(pair) = pair ? "#{pair[0]}..#{pair[1]}" : "n/a"
  end
end
