# frozen_string_literal: true

module LimitFetchBench
  # Markdown tables of the rate section (RateSummary): the fetch cost of a
  # rate that never binds, a hot key's backlog behind its rate against a
  # reschedule-based limiter, and an idle process with jobs parked behind a
  # rate (what it costs while it waits; how soon a job starts once its
  # window opens).
  module RateTable
    THROUGHPUT = [
      "variant", "jobs/s", "× no limit / × BasicFetch", "Redis cmds/job (× no limit)",
      "process CPU µs/job (× no limit / × BasicFetch)", "Redis CPU µs/job (× no limit / × BasicFetch)",
      "round trips/job (Ruby + Rust)", "Redis ceiling jobs/s", "starts counted (fewest in a run) / jobs",
      "limits parked behind a rate"
    ].freeze
    HOT = [
      "variant", "all done, s", "other tenants' first start p50 / p99 s", "runs' p99 s",
      "hot backlog's last start, s / least its rate allows (×)",
      "hot starts within a period, most: counted by the gem / seen from the jobs / limit",
      "executed (rescheduled)", "Redis cmds / executed job", "round trips / executed job",
      "process CPU µs / executed job", "Redis CPU µs / executed job"
    ].freeze
    WAIT = [
      "", "Redis cmds/s", "Redis cmds/s over all runs", "process CPU %", "Redis CPU %",
      "jobs parked (fewest at a window's end)"
    ].freeze
    PICKUP = [
      "openings", "pickup after the window opens: min / p50 / p95 / p99 / max ms", "runs' p99 ms", "p99 target",
      "of which until the fetch: min / p50 / p95 / p99 / max ms", "Redis cmds / opening", "scripts / opening",
      "starts within a period, most / limit"
    ].freeze

    module_function

    def throughput(rows) = Table.render(THROUGHPUT, rows.values.map { throughput_row(_1) })

    def throughput_row(row)
      none = row["vs_none"] || {}
      [row["label"], Table.spread(row["jobs_per_s"], "%.0f"), pair(none["jobs_per_s"], row["ratio"]),
       Table.with_ratio(row["commands_per_job"], "%.2f", none["commands"]),
       cpu(row, "process_cpu", "%.0f", none), cpu(row, "redis_cpu", "%.1f", none), Table.round_trips(row),
       Table.ceiling(row), starts(row), row["rate_parked_max"] || "–"]
    end

    # "39 (×1.02 / ×0.74)": the figure, its ratios to no limit and to BasicFetch.
    def cpu(row, name, fmt, none)
      value = row["#{name}_us_per_job"]
      return "–" unless value

      "#{format(fmt, value)} (#{pair(none[name], row["#{name}_ratio"])})"
    end

    def pair(first, second) = "#{Table.ratio(first)} / #{Table.ratio(second)}"

    def starts(row)
      row["rate"] ? "#{Table.num(row["starts_counted_min"], "%d")} / #{row["jobs"]}" : "–"
    end

    def hot(rows) = Table.render(HOT, rows.values.map { hot_row(_1) })

    def hot_row(row)
      [row["label"], Table.spread(row["seconds"], "%.2f"), first_start(row["cold_first_start_s"]),
       Table.spread(row["run_p99_s"], "%.3f"), backlog(row), most(row),
       "#{Table.num(row["executed"], "%d")} (#{Table.num(row["rescheduled"], "%d")})"] + hot_costs(row)
    end

    def first_start(first) = "#{Table.num(first["p50"], "%.3f")} / #{Table.num(first["p99"], "%.3f")}"

    def hot_costs(row)
      {"commands" => "%.1f", "round_trips" => "%.2f", "process_cpu_us" => "%.0f", "redis_cpu_us" => "%.0f"}
        .map { |name, fmt| Table.num(row["#{name}_per_executed_job"], fmt) }
    end

    def backlog(row)
      "#{Table.spread(row["hot_last_start_s"], "%.2f")} / #{Table.num(row["hot_ideal_s"], "%.2f")} " \
        "(#{Table.ratio(row["hot_vs_ideal"])})"
    end

    # With a note where the sampler saw fewer starts than the hot jobs (a
    # lower bound then).
    def most(row)
      seen = row["hot_starts_counted_min"]
      missed = seen && seen < row["hot_jobs"] ? " (only #{seen} of #{row["hot_jobs"]} starts sampled)" : ""
      "#{row["hot_most_in_window_counted"] || "–"} / #{row["hot_most_in_window_perform"] || "–"} / " \
        "#{row["rate"][0]}#{missed}"
    end

    def wait(row)
      phases = {"blocking" => ["rate_idle_blocking", 0], "parked" => ["rate_idle", row["parked_jobs_min"] || "–"]}
      Table.render(WAIT, phases.map { |phase, (key, parked)| wait_row(row, phase, key) << parked })
    end

    def wait_row(row, phase, key)
      costs = row["costs"][phase]
      ["#{RateVariants::ALL[key].label} (#{row["runs"][phase]} runs)", Table.spread(costs["commands_per_s"], "%.2f"),
       Table.num(row["pooled_commands_per_s"][phase], "%.2f"), Table.spread(costs["process_cpu_percent"], "%.3f"),
       Table.spread(costs["redis_cpu_percent"], "%.3f")]
    end

    def pickup(row)
      cells = [row["openings"], latencies(row["latency_ms"]), Table.spread(row["run_p99_ms"], "%.2f"), target(row),
               latencies(row["fetch_latency_ms"]), Table.num(row["commands_per_opening"], "%.1f"),
               Table.num(row["scripts_per_opening"], "%.1f"),
               "#{row["most_in_window"]} / #{RateVariants::PACED_RATE[0]}"]
      Table.render(PICKUP, [cells])
    end

    def latencies(latency) = %w[min p50 p95 p99 max].map { Table.num(latency[_1], "%.2f") }.join(" / ")

    def target(row) = "≤ #{Table.num(row["target_p99_ms"], "%.0f")} ms: #{met(row["p99_within_target"])}"

    def met(value)
      return "cannot tell (no latencies)" if value.nil?

      value ? "met" : "**missed**"
    end

    # "fcall 0.60, get 0.30, ...": the commands of a phase, per second.
    def mix(commands)
      return "none" if commands.empty?

      commands.first(10).map { |name, rate| format("%<n>s %<r>.2f", n: name, r: rate) }.join(", ")
    end
  end
end
