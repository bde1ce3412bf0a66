# frozen_string_literal: true

module LimitFetchBench
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

    # "fcall 0.60, get 0.30, ...": the commands of a phase, per second.
    def mix(commands)
      commands.empty? ? "none" : commands.first(10).map { |name, rate| "#{name} #{format("%.2f", rate)}" }.join(", ")
    end
  end
end
