# frozen_string_literal: true

module LimitFetchBench
  # One line per finished run, for the terminal.
  module Progress
    # The sections whose line a module of their own makes.
    OWN_LINES = {"rate" => RateProgress, "fair" => FairProgress}.freeze

    module_function

    def line(run)
      case run["section"]
      when "idle" then idle(run)
      when "fetch" then "fetch cost#{" @#{run["build"]}" if run["build"]}: #{run["runs"].size} measurements"
      when "keyed" then keyed(run)
      when "rate", "fair" then OWN_LINES.fetch(run["section"]).line(run)
      when "back_off", "memory" then send(run["section"], run)
      else throughput(run)
      end
    end

    def throughput(run)
      format("%-10<s>s r%<r>d %-52<v>s %8<t>.0f jobs/s  %<rt>.2f RT/job  max %<max>s",
        s: run["section"], r: run["round"], v: Variant[run["variant"]].label, t: run["jobs_per_s"],
        rt: run["round_trips_per_job"], max: max_running(run))
    end

    def keyed(run)
      case Variant[run["variant"]].workload
      when :hot then hot(run)
      when :keys then keys(run)
      else throughput(run)
      end
    end

    def hot(run)
      format("%-10<s>s r%<r>d %-52<v>s %6<t>.1f s  cold first start p50 %<p50>.2f / p99 %<p99>.2f s  " \
             "hot max %<max>d  parked max %<parked>d  %<c>.1f cmds/job  %<x>d executed",
        s: "keyed", r: run["round"], v: Variant[run["variant"]].label, t: run["seconds"],
        p50: Stats.percentile(run["cold_first_start_s"], 50), p99: Stats.percentile(run["cold_first_start_s"], 99),
        max: run["hot_max_running"], parked: run["max_parked"], c: run["commands_per_executed_job"],
        x: run["executed"])
    end

    def keys(run)
      format("%-10<s>s r%<r>d %-52<v>s keys %<kb>d -> %<ka>d, limit keys left %<left>d, used_memory %<mb>d -> %<ma>d",
        s: "keyed", r: run["round"], v: Variant[run["variant"]].label, kb: run["before"]["key_count"],
        ka: run["after"]["key_count"], left: run["after"]["limit_keys"], mb: run["before"]["used_memory"],
        ma: run["after"]["used_memory"])
    end

    def idle(run)
      latencies = run["latencies_ms"]
      format("%-10<s>s r%<r>d %-52<v>s p50 %<p>.1f ms (%<n>d jobs)  idle %<c>.1f cmd/s, process CPU %<cpu>.2f%%",
        s: "idle", r: run["round"], v: Variant[run["variant"]].label, p: Stats.median(latencies) || 0,
        n: latencies.size, c: run["idle"]["commands_per_s"], cpu: run["idle"]["process_cpu_percent"])
    end

    def back_off(run)
      head = format("%-10<s>s r%<r>d %-52<v>s", s: "back_off", r: run["round"], v: Variant[run["variant"]].label)
      return "#{head} skipped: #{run["skipped"]}" if run["skipped"]

      format("%<head>s %<time>s (ideal %<i>.2f s)  %<c>d calls, %<p>.1f%% 429  %<rj>d jobs retried  " \
             "done once: %<once>s", head:, time: done_in(run), i: run["ideal_seconds"], c: run["calls"],
        p: run["too_many_share"] * 100, rj: run["retried_jobs"], once: done_once(run))
    end

    def memory(run)
      rss = run["checkpoints"].map { format("%<mb>.1f MB after %<n>d jobs", mb: _1["VmRSS"] / 1024.0, n: _1["jobs"]) }
      format("%-10<s>s r%<r>d %-52<v>s RSS %<rss>s, %<t>d threads", s: "memory", r: run["round"],
        v: Variant[run["variant"]].label, rss: rss.join(", "), t: run["checkpoints"].last["Threads"])
    end

    def done_in(run) = run["seconds"] ? format("%.2f s", run["seconds"]) : "not done"

    def done_once(run)
      return "yes" if run["done_once"]

      run["done_more_than_once"].positive? ? "NO (#{run["done_more_than_once"]} twice or more)" : "not all done"
    end

    def max_running(run)
      flight = run["max_in_flight"].values.max || 0
      running = run["max_running"].values.max || 0
      "#{flight} in flight, #{running} running#{" / limit #{run["limit"]}" if run["limit"]}"
    end
  end
end
