# frozen_string_literal: true

module LimitFetchBench
  # Markdown tables of the keyed section's hot-key workload and of what its
  # distinct keys left in Redis (the distinct-key throughput is a
  # Table.throughput).
  module KeyedTable
    HOT = [
      "variant", "all done, s", "× no key / × queue limit 2", "executed (dropped / rescheduled)",
      "other tenants' first start p50 / p99 s", "hot tenant's most running / limit", "hot key parked, most",
      "Redis cmds / executed job", "round trips / executed job", "Redis CPU µs / executed job"
    ].freeze
    KEYS = ["", "before", "after"].freeze

    module_function

    def hot(rows) = Table.render(HOT, rows.values.map { hot_row(_1) })

    def hot_row(row)
      [row["label"], Table.spread(row["seconds"], "%.2f"),
       "#{Table.ratio(row["vs_none"])} / #{Table.ratio(row["vs_queue2"])}",
       "#{row["executed"]} (#{row["dropped"]} / #{row["rescheduled"]})", first_start(row["cold_first_start_s"]),
       most(row), row["max_parked"]] + costs(row)
    end

    def most(row) = "#{row["hot_max_running"]} / #{row["hot_limit"] || "–"}"

    def first_start(first) = "#{Table.num(first["p50"], "%.2f")} / #{Table.num(first["p99"], "%.2f")}"

    def costs(row)
      [Table.num(row["commands_per_executed_job"], "%.1f"), Table.num(row["round_trips_per_executed_job"], "%.2f"),
       Table.num(row["redis_cpu_us_per_executed_job"], "%.0f")]
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
