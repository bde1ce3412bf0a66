# frozen_string_literal: true

module LimitFetchBench
  # Markdown tables of the keyed section: the distinct-key throughput (as
  # Table.throughput), the hot-key workload and what its distinct keys left
  # in Redis. `rev`: with --baseline, if the keyed variants had twins, the
  # baseline's revision; a column then gives each of this checkout's
  # variants its ratios to its twin (KeyedSummary). The hot key's CPU per
  # executed job is followed by its ratio to the same jobs with no key's.
  module KeyedTable
    HOT = [
      "variant", "all done, s", "× no key / × queue limit 2", "executed (dropped / rescheduled)",
      "other tenants' first start p50 / p99 s", "hot tenant's most running / limit", "hot key parked, most",
      "Redis cmds / executed job", "round trips / executed job", "process CPU µs / executed job (× no key)",
      "Redis CPU µs / executed job (× no key)"
    ].freeze
    KEYS = ["", "before", "after"].freeze

    module_function

    def distinct(rows, rev = nil)
      body = rows.values.map { Table.with_rev(Table.throughput_row(_1), 2, rev, rev_cell(_1)) }
      Table.render(Table.with_rev(Table::THROUGHPUT, 2, rev, "× @#{rev}"), body)
    end

    def hot(rows, rev = nil)
      body = rows.values.map { Table.with_rev(hot_row(_1), 2, rev, rev_cell(_1, first_start: true)) }
      Table.render(Table.with_rev(HOT, 2, rev, "× @#{rev}"), body)
    end

    # Throughput, then (first start p50 / p99,) commands, round trips, process and Redis CPU.
    def rev_cell(row, first_start: false)
      return "–" unless row["rev_ratio"]

      parts = ["cmds #{Table.ratio(row["commands_rev_ratio"])}", "RT #{Table.ratio(row["round_trips_rev_ratio"])}",
               *Table.cpu_rev(row)]
      if first_start
        parts.unshift("first start #{Table.ratio(row["first_start_p50_rev_ratio"])} / " \
                      "#{Table.ratio(row["first_start_p99_rev_ratio"])}")
      end
      "#{Table.ratio(row["rev_ratio"])} (#{parts.join(", ")})"
    end

    def hot_row(row)
      [row["label"], Table.spread(row["seconds"], "%.2f"),
       "#{Table.ratio(row["vs_none"])} / #{Table.ratio(row["vs_queue2"])}",
       "#{row["executed"]} (#{row["dropped"]} / #{row["rescheduled"]})", first_start(row["cold_first_start_s"]),
       most(row), row["max_parked"]] + costs(row)
    end

    def most(row) = "#{row["hot_max_running"]} / #{row["hot_limit"] || "–"}"

    def first_start(first) = "#{Table.num(first["p50"], "%.2f")} / #{Table.num(first["p99"], "%.2f")}"

    def costs(row)
      [Table.num(row["commands_per_executed_job"], "%.1f"), Table.num(row["round_trips_per_executed_job"], "%.2f")] +
        %w[process_cpu redis_cpu].map do |name|
          Table.with_ratio(row["#{name}_us_per_executed_job"], "%.0f", row["#{name}_vs_none"])
        end
    end

    def keys(row)
      before = row["before"]
      after = row["after"]
      rows = [["Redis used_memory, bytes", before["used_memory"], after["used_memory"]],
              ["keys", before["key_count"], after["key_count"]],
              ["job limit keys (sidekiq:limit_fetch:limit:*)", before["limit_keys"], after["limit_keys"]],
              ["ids in the parked set", before["parked_members"], after["parked_members"]]]
      Table.render(KEYS, rows)
    end
  end
end
