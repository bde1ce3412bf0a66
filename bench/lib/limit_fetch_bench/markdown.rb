# frozen_string_literal: true

module LimitFetchBench
  # The Markdown report's tables (LimitFetchTools::Markdown#table): per
  # section, its columns, of a row of the summary's section; their cells'
  # formats are Markdown's.
  module Columns
    THROUGHPUT = [
      %w[variant label], ["jobs/s", "jobs_per_s", :spread, "%.0f"], ["×", "ratio", :ratio],
      ["round trips/job (Ruby + Rust)", -> { round_trips(_1) }], ["Redis cmds/job", "commands_per_job", :num, "%.2f"],
      ["process CPU µs/job", -> { with_ratio(_1["process_cpu_us_per_job"], "%.0f", _1["process_cpu_ratio"]) }],
      ["Redis CPU µs/job", -> { with_ratio(_1["redis_cpu_us_per_job"], "%.1f", _1["redis_cpu_ratio"]) }],
      ["Redis ceiling jobs/s", -> { ceiling(_1) }],
      ["slot utilisation", -> { _1["slow"] ? spread(_1["utilisation"], "%.2f") : "–" }],
      ["max in flight / running / limit",
       -> { "#{_1["max_in_flight"]} / #{_1["max_running"]} / #{_1["limit"] || "–"}" }]
    ].freeze
    IDLE = [
      %w[variant label], ["pickup p50 / p95 / p99 ms", "latency_ms", :percentiles], ["p50 ×", "p50_ratio", :ratio],
      ["runs' p50 ms", "run_p50_ms", :spread, "%.2f"], ["idle Redis cmds/s", "commands_per_s", :spread, "%.1f"],
      ["idle process CPU %", "process_cpu_percent", :spread, "%.2f"],
      ["idle Redis CPU %", "redis_cpu_percent", :spread, "%.2f"],
      ["freed slot taken p50 / p95 / p99 ms", "handoff_ms", :percentiles]
    ].freeze
    KEYED_HOT = [
      %w[variant label], ["all done, s", "seconds", :spread, "%.2f"],
      ["× no key / × queue limit 2", -> { "#{ratio(_1["vs_none"])} / #{ratio(_1["vs_queue2"])}" }],
      ["executed (dropped / rescheduled)", -> { "#{_1["executed"]} (#{_1["dropped"]} / #{_1["rescheduled"]})" }],
      ["other tenants' first start p50 / p99 s", "cold_first_start_s", :percentiles],
      ["hot tenant's most running / limit", -> { "#{_1["hot_max_running"]} / #{_1["hot_limit"] || "–"}" }],
      ["hot key parked, most", "max_parked"], ["Redis cmds / executed job", "commands_per_executed_job", :num, "%.1f"],
      ["round trips / executed job", "round_trips_per_executed_job", :num, "%.2f"],
      ["process CPU µs / executed job (× no key)", -> { vs_none(_1, "process_cpu") }],
      ["Redis CPU µs / executed job (× no key)", -> { vs_none(_1, "redis_cpu") }]
    ].freeze
    # Rows: [name, key].
    KEYS = [["", 0], ["before", -> { keyed["keys"]["before"][_1[1]] }], ["after", -> { keyed["keys"]["after"][_1[1]] }]]
           .freeze
    KEY_ROWS = [["Redis used_memory, bytes", "used_memory"], %w[keys key_count],
                ["job limit keys (sidekiq:limit_fetch:limit:*)", "limit_keys"],
                ["ids in the parked set", "parked_members"]].freeze
    RATE_THROUGHPUT = [
      %w[variant label], ["jobs/s", "jobs_per_s", :spread, "%.0f"],
      ["× no limit / × BasicFetch", -> { "#{ratio(none(_1)["jobs_per_s"])} / #{ratio(_1["ratio"])}" }],
      ["Redis cmds/job (× no limit)", -> { with_ratio(_1["commands_per_job"], "%.2f", none(_1)["commands"]) }],
      ["process CPU µs/job (× no limit / × BasicFetch)", -> { rate_cpu(_1, "process_cpu", "%.0f") }],
      ["Redis CPU µs/job (× no limit / × BasicFetch)", -> { rate_cpu(_1, "redis_cpu", "%.1f") }],
      ["round trips/job (Ruby + Rust)", -> { round_trips(_1) }], ["Redis ceiling jobs/s", -> { ceiling(_1) }],
      ["starts counted (fewest in a run) / jobs",
       -> { _1["rate"] ? "#{num(_1["starts_counted_min"], "%d")} / #{_1["jobs"]}" : "–" }],
      ["limits parked behind a rate", -> { _1["rate_parked_max"] || "–" }]
    ].freeze
    RATE_HOT = [
      %w[variant label], ["all done, s", "seconds", :spread, "%.2f"],
      ["other tenants' first start p50 / p99 s", "cold_first_start_s", :percentiles, "%.3f"],
      ["runs' p99 s", "run_p99_s", :spread, "%.3f"],
      ["hot backlog's last start, s / least its rate allows (×)", lambda do |row|
        last = spread(row["hot_last_start_s"], "%.2f")
        "#{last} / #{num(row["hot_ideal_s"], "%.2f")} (#{ratio(row["hot_vs_ideal"])})"
      end],
      # With a note where the sampler saw fewer starts than the hot jobs (a lower bound then).
      ["hot starts within a period, most: counted by the gem / seen from the jobs / limit", lambda do |row|
        seen = row["hot_starts_counted_min"]
        missed = seen && seen < row["hot_jobs"] ? " (only #{seen} of #{row["hot_jobs"]} starts sampled)" : ""
        "#{row["hot_most_in_window_counted"] || "–"} / #{row["hot_most_in_window_perform"] || "–"} / " \
          "#{row["rate"][0]}#{missed}"
      end],
      ["executed (rescheduled)", -> { "#{num(_1["executed"], "%d")} (#{num(_1["rescheduled"], "%d")})" }],
      ["Redis cmds / executed job", "commands_per_executed_job", :num, "%.1f"],
      ["round trips / executed job", "round_trips_per_executed_job", :num, "%.2f"],
      ["process CPU µs / executed job", "process_cpu_us_per_executed_job", :num, "%.0f"],
      ["Redis CPU µs / executed job", "redis_cpu_us_per_executed_job", :num, "%.0f"]
    ].freeze
    # The scenario, then (a column per variant, Markdown#fetch_cost_columns) Redis's costs.
    FETCH_COST = [
      %w[scenario label], ["Redis cmds/call (same order)", -> { joined(_1, "commands_per_call", "%.0f") }],
      ["Redis µs/call (same order)", -> { joined(_1, "redis_us_per_call", "%.1f") }]
    ].freeze
    PICKUP = [
      %w[openings openings],
      ["pickup after the window opens: min / p50 / p95 / p99 / max ms", "latency_ms", :percentiles],
      ["runs' p99 ms", "run_p99_ms", :spread, "%.2f"],
      ["p99 target", lambda do |row|
        met = {nil => "cannot tell (no latencies)", true => "met", false => "**missed**"}[row["p99_within_target"]]
        "≤ #{num(row["target_p99_ms"], "%.0f")} ms: #{met}"
      end],
      ["of which until the fetch: min / p50 / p95 / p99 / max ms", "fetch_latency_ms", :percentiles],
      ["Redis cmds / opening", "commands_per_opening", :num, "%.1f"],
      ["scripts / opening", "scripts_per_opening", :num, "%.1f"],
      ["starts within a period, most / limit", -> { "#{_1["most_in_window"]} / #{RateVariants::PACED_RATE[0]}" }]
    ].freeze
    # With --baseline: the twin's row after this checkout's.
    PICKUP_TWINNED = [["gem", -> { _1["gem"] || "this checkout" }], *PICKUP].freeze
    # A skipped run's cells, after why in the first, are "–".
    BACK_OFF = [["variant", -> { _1["skipped"] ? "#{_1["label"]} (skipped: #{_1["skipped"]})" : _1["label"] }], *[
      ["all done, s / ideal (×)", lambda { |row|
        next "not all done in #{row["timeout"] || "the timeout"} s (#{row["done_jobs"]} of #{row["jobs"]})" unless
          row["seconds"]

        "#{num(row["seconds"], "%.2f")} / #{num(row["ideal_seconds"], "%.2f")} (#{ratio(row["vs_ideal"])})"
      }],
      ["50 / 90 / 99% done, s",
       -> { _1["done_at"] ? _1["done_at"].values_at("50", "90", "99").map { |at| num(at, "%.1f") }.join(" / ") : "–" }],
      ["calls / 429s (share)", -> { "#{_1["calls"]} / #{_1["too_many"]} (#{percent(_1["too_many_share"], "%.1f")})" }],
      ["tenant's most calls in flight", "max_in_flight", :num, "%d"], ["job runs", "runs"],
      ["jobs retried (highest retry_count)", -> { "#{_1["retried_jobs"]} (#{num(_1["max_retry_count"], "%d")})" }],
      ["retry set, most / at the end", -> { "#{_1["retry_set_max"]} / #{_1["retry_set_end"]}" }],
      ["dead set", "dead_set"], ["Sidekiq failures", "failed"],
      ["every job done once", lambda { |row|
        "#{row["done_once"] ? "yes" : "**no**"} (#{row["done_jobs"]} of #{row["jobs"]} done, " \
          "#{row["done_more_than_once"]} more than once)"
      }],
      ["after each capacity change, 0–5 s / 5–10 s: 429 share, capacity used", -> { after_changes(_1) }]
    ].map { |head, *cell| [head, ->(row) { row["skipped"] ? "–" : cell(row, *cell) }] }].freeze
    # Each header gives the issue's target.
    FAIR = [
      ["declaration", lambda { |row|
        "`#{row["declarations"]["FairJob"]}`#{" (stand-in: fair: not accepted)" unless row["fair_accepted"]}" \
          "#{" in `#{row["queue_config"]}`" if row["queue_config"]}"
      }],
      ["a: slots busy, A alone (≥ 9.5)", %w[arrivals alone], :num, "%.2f"],
      ["b: A / B / C over the window (5 s); while all had work (3–4 each)", -> { fair_shares(_1["arrivals"]) }],
      ["b: A back to ≥ 9.5, s (≤ 1)", lambda { |row|
        b = row["arrivals"] or next "–"
        b["regained_s"] ? num(b["regained_s"], "%.2f") : "not within #{num(b["regain_looked_s"], "%.1f")} s"
      }],
      ["c: gold / B / C over the window (10 s); while all had work (gold 6 ± 1)", -> { fair_shares(_1["weighted"]) }],
      ["d: first start max / p50, s (max ≤ 1)", lambda { |row|
        d = row["hot"] or next "–"
        "#{num(d["first_start_max"], "%.2f")} / #{num(d["first_start_p50"], "%.2f")} " \
          "(#{d["started"]} of #{d["tenants"]} started within #{row["sizes"]["first_start_wait"]} s)"
      }],
      ["e: most running / slots; every job done once", lambda { |row|
        tallies = FairScenarios::SCENARIOS.keys.filter_map { row.dig(_1, "tally") }
        "#{tallies.map { _1["max_running"] }.max} / #{row["sizes"]["slots"]}; " \
          "#{tallies.all? { _1["done_once"] } ? "yes" : "**no**"} (#{tallies.sum { _1["jobs"] }} jobs)"
      }],
      ["Redis CPU µs/job: fair / plain (× ≤ 1.5)", lambda { |row|
        "#{num(row["cost"]["fair"], "%.1f")} / #{num(row["cost"]["plain"], "%.1f")} (#{ratio(row["cost"]["ratio"])})"
      }]
    ].freeze
    MEMORY = [
      %w[variant label], %w[jobs jobs], ["RSS MB", "VmRSS", :spread, "%.1f"],
      ["RSS − BasicFetch's, MB (×)", -> { "#{num(_1["vs_basic_mb"], "%+.1f")} (#{ratio(_1["ratio"])})" }],
      ["peak RSS MB", "VmHWM", :spread, "%.1f"], ["anonymous MB", "RssAnon", :spread, "%.1f"],
      ["file-backed MB", "RssFile", :spread, "%.1f"], ["PSS MB", "Pss", :spread, "%.1f"], %w[threads threads]
    ].freeze

    # "3.40 / 3.31 / 3.29 (5.0 s); 3.41 / 3.30 / 3.29 (3.5 s)": each
    # tenant's slots over the window, then while all had work, each with
    # its length.
    def fair_shares(figures)
      return "–" unless figures

      [%w[shares window_s], %w[shares_while_all while_all_s]].map do |shares, seconds|
        "#{figures[shares].values.map { num(_1, "%.2f") }.join(" / ")} (#{num(figures[seconds], "%.1f")} s)"
      end.join("; ")
    end
  end

  # The summary as Markdown (markdown.md.erb): a header with the setup, one
  # table per section, the limit check, and how round trips are counted;
  # written to results beside the summary's JSON.
  # With --baseline, a column after the ratio to BasicFetch gives each
  # LimitFetch variant's ratio to its twin (a note in its cell, for the
  # fetch cost); in the keyed section only if the baseline had job limits.
  class Markdown
    include LimitFetchTools::Markdown
    include Columns

    TEMPLATE = File.join(__dir__, "markdown.md.erb")

    attr_reader :summary, :meta, :options, :baseline, :rev, :keyed_rev

    def initialize(summary)
      @summary = summary
      @meta = summary["meta"]
      @options = @meta["options"]
      @baseline = @meta["baseline"]
      @rev = @baseline&.fetch("rev")
      @keyed_rev = @rev if @baseline&.fetch("job_limits", nil)
    end

    def render = LimitFetchTools::Markdown.render(TEMPLATE, binding)

    # Writes latest.json, then latest.md, into `dir`, each through a
    # temporary file, so that a failed bench leaves the previous ones whole;
    # the paths written.
    def write(dir)
      FileUtils.mkdir_p(dir)
      [["latest.json", -> { "#{JSON.pretty_generate(summary)}\n" }], ["latest.md", -> { render }]].map do |name, text|
        path = File.join(dir, name)
        File.write("#{path}.tmp", text.call)
        File.rename("#{path}.tmp", path)
        path
      end
    end

    private

    def keyed = summary["keyed"] || {}
    def rate = summary["rate"] || {}

    # The column `cell` makes, headed `head`, after the ratio to BasicFetch, with a baseline.
    def with_rev(columns, rev, head, &cell) = rev ? columns.dup.insert(3, [head, cell]) : columns

    def round_trips(row)
      format("%<all>.2f (%<ruby>.2f + %<rust>.2f)", all: row["round_trips_per_job"],
        **row["round_trips"].transform_keys(&:to_sym))
    end

    def ceiling(row) = with_ratio(row["redis_ceiling_jobs_per_s"], "%.0f", row["redis_ceiling_ratio"])

    # The twin's ratios: of throughputs, then in brackets (of `parts` and) of process and Redis CPU per job.
    def rev_cell(row, *parts)
      return "–" unless row["rev_ratio"]

      cpu = ["process CPU #{ratio(row["process_cpu_rev_ratio"])}", "Redis CPU #{ratio(row["redis_cpu_rev_ratio"])}"]
      "#{ratio(row["rev_ratio"])} (#{[*parts, *cpu].join(", ")})"
    end

    # The keyed section's: (of the first start p50 / p99,) of commands and round trips.
    def keyed_rev_cell(row, first_start: false)
      first = "first start #{ratio(row["first_start_p50_rev_ratio"])} / #{ratio(row["first_start_p99_rev_ratio"])}"
      rev_cell(row, *(first if first_start), "cmds #{ratio(row["commands_rev_ratio"])}",
        "RT #{ratio(row["round_trips_rev_ratio"])}")
    end

    # A column per variant of the first scenario, after FETCH_COST's first.
    def fetch_cost_columns
      labels = summary["fetch_cost"].values.take(1).flat_map { _1["variants"].values.map { |cell| cell["label"] } }
      FETCH_COST.dup.insert(1, *labels.each_index.map { |i| ["#{labels[i]}: µs/call", -> { fetch_cost(_1, i) }] })
    end

    def fetch_cost(row, index)
      cell = row["variants"].values[index]
      text = "#{spread(cell["p50_us"], "%.0f")} #{ratio(cell["ratio"])}"
      cell["rev_ratio"] ? "#{text} (#{ratio(cell["rev_ratio"])} @#{rev})" : text
    end

    # "→2: 5.0%, 90% / 1.0%, 95%": after each capacity change, the 429 share and the capacity used, then settled.
    def after_changes(row)
      changes = row["after_changes"] || []
      return "–" if changes.empty?

      changes.zip(row["settled_after_changes"] || []).map do |change, settled|
        "→#{change["capacity"]}: #{[change, settled].compact.map { stretch(_1) }.join(" / ")}"
      end.join("; ")
    end

    def stretch(seen) = "#{percent(seen["too_many_share"], "%.1f")}, #{percent(seen["capacity_used"], "%.0f")}"
    # "9.1%": a share in percent.
    def percent(share, fmt) = "#{num(share && (share * 100), fmt)}%"
    def joined(row, key, fmt) = row["variants"].values.map { num(_1[key], fmt) }.join(" / ")
    # "0.41 / 0.97 / 1.60": a row's percentiles.
    def percentiles(values, fmt = "%.2f") = values ? values.values.map { num(_1, fmt) }.join(" / ") : "–"
    # CPU per executed job, with its ratio to the same jobs with no key.
    def vs_none(row, name) = with_ratio(row["#{name}_us_per_executed_job"], "%.0f", row["#{name}_vs_none"])
    def none(row) = row["vs_none"] || {}

    # "39 (×1.02 / ×0.74)": the figure, its ratios to no limit and to BasicFetch.
    def rate_cpu(row, name, fmt)
      value = row["#{name}_us_per_job"]
      value ? "#{format(fmt, value)} (#{ratio(none(row)[name])} / #{ratio(row["#{name}_ratio"])})" : "–"
    end
  end
end
