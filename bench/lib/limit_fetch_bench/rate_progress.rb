# frozen_string_literal: true

module LimitFetchBench
  # The terminal's line for a finished run of the rate section (Progress).
  module RateProgress
    module_function

    def line(run)
      case Variant[run["variant"]].workload
      when :rate_hot then hot(run)
      when :rate_idle then idle(run)
      else "#{Progress.throughput(run)}  starts counted #{run["starts_counted"] || "–"}"
      end
    end

    def hot(run)
      firsts = run["cold_first_start_s"]
      format("%-10<s>s r%<r>d %-52<v>s %6<t>.1f s  others' first start p50 %<p50>.3f / p99 %<p99>.3f s  hot last " \
             "start %<last>.2f s (least %<ideal>.2f)  most in a window %<most>s  %<c>.1f cmds/job  %<x>d rescheduled",
        s: "rate", r: run["round"], v: Variant[run["variant"]].label, t: run["seconds"],
        p50: Stats.percentile(firsts, 50), p99: Stats.percentile(firsts, 99), last: run["hot_last_start_s"],
        ideal: run["hot_ideal_s"], most: run["hot_most_in_window_counted"] || run["hot_most_in_window_perform"],
        c: run["commands_per_executed_job"], x: run["rescheduled"])
    end

    def idle(run)
      latencies = run.dig("pace", "latencies_ms") || []
      format("%-10<s>s r%<r>d %-52<v>s pickup p50 %<p50>s / p99 %<p99>s ms (%<n>d openings)", s: "rate",
        r: run["round"], v: Variant[run["variant"]].label, n: latencies.size,
        p50: LimitFetchTools::Markdown.num(Stats.median(latencies), "%.2f"),
        p99: LimitFetchTools::Markdown.num(Stats.percentile(latencies, 99), "%.2f"))
    end
  end
end
