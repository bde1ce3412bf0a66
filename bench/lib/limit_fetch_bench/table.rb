# frozen_string_literal: true

module LimitFetchBench
  # Markdown tables of the summary's sections. `rev`: with --baseline, the
  # baseline's revision; a column (a note, for the fetch cost) then gives
  # each LimitFetch variant's ratio to its twin (for throughput, its CPU
  # per job's too).
  module Table
    THROUGHPUT = [
      "variant", "jobs/s", "×", "round trips/job (Ruby + Rust)", "Redis cmds/job", "process CPU µs/job",
      "Redis CPU µs/job", "Redis ceiling jobs/s", "slot utilisation", "max in flight / running / limit"
    ].freeze
    IDLE = [
      "variant", "pickup p50 / p95 / p99 ms", "p50 ×", "runs' p50 ms", "idle Redis cmds/s", "idle process CPU %",
      "idle Redis CPU %", "freed slot taken p50 / p95 / p99 ms"
    ].freeze
    FETCH_COST_TAIL = ["Redis cmds/call (same order)", "Redis µs/call (same order)"].freeze

    module_function

    def render(head, rows)
      lines = [head, head.map { "---" }] + rows
      lines.map { "| #{_1.join(" | ")} |" }.join("\n")
    end

    # The twin's ratio as the column after the one at `index`, with --baseline.
    def with_rev(cells, index, rev, value) = rev ? cells.dup.insert(index + 1, value) : cells

    def throughput(variants, rev = nil)
      rows = variants.values.map { with_rev(throughput_row(_1), 2, rev, throughput_rev(_1)) }
      render(with_rev(THROUGHPUT, 2, rev, "× @#{rev}"), rows)
    end

    def throughput_row(row)
      [row["label"], spread(row["jobs_per_s"], "%.0f"), ratio(row["ratio"]), round_trips(row),
       num(row["commands_per_job"], "%.2f"), cpu(row, "process_cpu", "%.0f"), cpu(row, "redis_cpu", "%.1f"),
       ceiling(row), row["slow"] ? spread(row["utilisation"], "%.2f") : "–", concurrency(row)]
    end

    # Per job, with the ratio to BasicFetch's: "101 ×0.94".
    def cpu(row, name, fmt) = with_ratio(row["#{name}_us_per_job"], fmt, row["#{name}_ratio"])

    def ceiling(row) = with_ratio(row["redis_ceiling_jobs_per_s"], "%.0f", row["redis_ceiling_ratio"])

    # The twin's ratios: of throughputs, then (of process and Redis CPU per job).
    def throughput_rev(row)
      return "–" unless row["rev_ratio"]

      "#{ratio(row["rev_ratio"])} (#{cpu_rev(row).join(", ")})"
    end

    def cpu_rev(row)
      ["process CPU #{ratio(row["process_cpu_rev_ratio"])}", "Redis CPU #{ratio(row["redis_cpu_rev_ratio"])}"]
    end

    def concurrency(row) = "#{row["max_in_flight"]} / #{row["max_running"]} / #{row["limit"] || "–"}"

    def round_trips(row)
      format("%<all>.2f (%<ruby>.2f + %<rust>.2f)", all: row["round_trips_per_job"],
        ruby: row["round_trips"]["ruby"], rust: row["round_trips"]["rust"])
    end

    def idle(variants, rev = nil)
      rows = variants.values.map { with_rev(idle_row(_1), 2, rev, ratio(_1["p50_rev_ratio"])) }
      render(with_rev(IDLE, 2, rev, "p50 × @#{rev}"), rows)
    end

    def idle_row(row)
      [row["label"], percentiles(row["latency_ms"]), ratio(row["p50_ratio"]),
       spread(row["run_p50_ms"], "%.2f"), spread(row["commands_per_s"], "%.1f"),
       spread(row["process_cpu_percent"], "%.2f"), spread(row["redis_cpu_percent"], "%.2f"),
       percentiles(row["handoff_ms"])]
    end

    def percentiles(values)
      values ? values.values.map { num(_1, "%.2f") }.join(" / ") : "–"
    end

    def fetch_cost(scenarios, rev = nil)
      labels = scenarios.values.first["variants"].values.map { _1["label"] }
      head = ["scenario"] + labels.map { "#{_1}: µs/call" } + FETCH_COST_TAIL
      render(head, scenarios.values.map { fetch_cost_row(_1, rev) })
    end

    def fetch_cost_row(row, rev)
      cells = row["variants"].values
      [row["label"]] + cells.map { fetch_cost_cell(_1, rev) } +
        [joined(cells, "commands_per_call", "%.0f"), joined(cells, "redis_us_per_call", "%.1f")]
    end

    def fetch_cost_cell(cell, rev)
      text = "#{spread(cell["p50_us"], "%.0f")} #{ratio(cell["ratio"])}"
      cell["rev_ratio"] ? "#{text} (#{ratio(cell["rev_ratio"])} @#{rev})" : text
    end

    def joined(cells, key, fmt) = cells.map { num(_1[key], fmt) }.join(" / ")

    def spread(spread, fmt)
      return "–" unless spread

      "#{format(fmt, spread["median"])} (#{format(fmt, spread["min"])}–#{format(fmt, spread["max"])})"
    end

    def ratio(value) = value ? format("×%.2f", value) : "–"

    # "28.0 ×2.95"; the value alone without a ratio.
    def with_ratio(value, fmt, factor)
      return "–" unless value

      factor ? "#{format(fmt, value)} #{ratio(factor)}" : format(fmt, value)
    end

    def num(value, fmt) = value ? format(fmt, value) : "–"
  end
end
