# frozen_string_literal: true

module LimitFetchBench
  # The keyed section over its runs: the distinct-key throughput (as the
  # throughput section's, the keyed variant's ratio taken to the unkeyed
  # one), the hot-key workload per variant, and what distinct keys left in
  # Redis. With a baseline (`rev`) whose twins ran, each of this checkout's
  # variants that has one is followed by it, and gains its ratios to it
  # (this checkout's figure over the twin's): "rev_ratio", of throughputs,
  # as the other sections'; "commands_rev_ratio", "round_trips_rev_ratio",
  # "process_cpu_rev_ratio" and "redis_cpu_rev_ratio", per job (per executed
  # job, for the hot key); and for the hot key "first_start_p50_rev_ratio"
  # and "first_start_p99_rev_ratio", of the other tenants' first starts. The
  # hot key's rows also give their CPU per executed job over that of the
  # same jobs with no key ("process_cpu_vs_none", "redis_cpu_vs_none"), as
  # the distinct keys' give theirs per job over no key's (ThroughputSummary).
  # A twin's own ratios are to twins: its distinct keys to the baseline's
  # jobs with no key, its hot key's × no key to the baseline's.
  class KeyedSummary
    HOT_MEDIANS = %w[
      executed dropped rescheduled commands_per_executed_job round_trips_per_executed_job redis_cpu_us_per_executed_job
      process_cpu_us_per_executed_job
    ].freeze
    # Ratio key prefix => the cost's key, less its "_per_job" or "_per_executed_job".
    COSTS = {"commands" => "commands", "round_trips" => "round_trips", "process_cpu" => "process_cpu_us",
             "redis_cpu" => "redis_cpu_us"}.freeze
    MOST = %w[hot_max_running cold_max_running max_parked].freeze

    # The other tenants' first starts (RateSummary's too): percentiles over
    # all runs' tenants, and the spread of the runs' p99.
    def self.first_starts(runs)
      {"cold_first_start_s" => Stats.percentiles(runs.flat_map { _1["cold_first_start_s"] }, "p50", "p99"),
       "run_p99_s" => Stats.spread(runs.map { Stats.percentile(_1["cold_first_start_s"], 99) })}
    end

    def initialize(runs, rev = nil)
      @groups = runs.select { _1["section"] == "keyed" }.group_by { _1["variant"] }
      @rev = rev
    end

    def to_h
      return {} if @groups.empty?

      {"distinct" => distinct, "hot" => hot, "keys" => @groups["keys"]&.first&.slice("jobs", "before", "after",
        "new_keys", "new_key_names")}
    end

    private

    def distinct
      rows = present(KeyedVariants::DISTINCT).to_h do |key|
        variant = Variant[key]
        [key, ThroughputSummary.new(variant, @groups[key], @groups[same_build(variant.baseline, variant)]).to_h]
      end
      with_rev_ratios(rows) do |row, twin|
        {"rev_ratio" => Stats.ratio(row["jobs_per_s"]["median"], twin["jobs_per_s"]["median"]),
         **cost_ratios(row, twin, "per_job")}
      end
    end

    def hot
      rows = present(KeyedVariants::HOT + KeyedVariants::SEEDS).to_h { [_1, hot_row(Variant[_1], @groups[_1])] }
      with_rev_ratios(rows) do |row, twin|
        {"rev_ratio" => Stats.ratio(twin["seconds"]["median"], row["seconds"]["median"]),
         **first_start_ratios(row, twin),
         **cost_ratios(row, twin, "per_executed_job")}
      end
    end

    def first_start_ratios(row, twin)
      %w[p50 p99].to_h do |pct|
        ["first_start_#{pct}_rev_ratio", Stats.ratio(row["cold_first_start_s"][pct], twin["cold_first_start_s"][pct])]
      end
    end

    # The keys whose runs there are, each followed by its twin's, if any.
    def present(keys) = keys.flat_map { [_1, (Twin.key(_1, @rev) if @rev)] }.compact.select { @groups[_1] }

    # The key of the variant `key` in `variant`'s build.
    def same_build(key, variant) = variant.build && key ? Twin.key(key, variant.build) : key

    # The rows, this checkout's with the ratios the block gives of a row to
    # its twin's, where the twin ran.
    def with_rev_ratios(rows)
      rows.to_h do |key, row|
        twin = @rev && rows[Twin.key(key, @rev)]
        [key, twin ? row.merge(yield(row, twin)) : row]
      end
    end

    # `per`: "per_job" (distinct keys) or "per_executed_job" (the hot key).
    def cost_ratios(row, twin, per)
      COSTS.to_h { |name, cost| ["#{name}_rev_ratio", Stats.ratio(row["#{cost}_#{per}"], twin["#{cost}_#{per}"])] }
    end

    def hot_row(variant, runs)
      {"label" => variant.label, "runs" => runs.size, "jobs" => runs.first["jobs"],
       "hot_limit" => runs.first["hot_limit"], "seconds" => Stats.spread(runs.map { _1["seconds"] })}
        .merge(versus(variant, runs), KeyedSummary.first_starts(runs), most(runs), medians(runs))
    end

    # The ratios to the same jobs with no key (and, of throughputs, with no
    # key under a queue limit of 2), in the variant's build.
    def versus(variant, runs)
      none = same_build("hot_none", variant)
      {"vs_none" => speed(runs, none), "vs_queue2" => speed(runs, same_build("hot_queue2", variant)),
       **cpu_vs_none(runs, none)}
    end

    # CPU per executed job (medians) over that of the same jobs with no key.
    def cpu_vs_none(runs, none)
      %w[process_cpu redis_cpu].to_h do |name|
        key = "#{COSTS[name]}_per_executed_job"
        ["#{name}_vs_none", @groups[none] && Stats.ratio(median(runs, key), median(@groups[none], key))]
      end
    end

    def median(runs, key) = Stats.median(runs.map { _1[key] })

    def most(runs) = MOST.to_h { |key| [key, runs.map { _1[key] }.max] }

    def medians(runs) = HOT_MEDIANS.to_h { |key| [key, median(runs, key)] }

    # Median time until every job was done, of `other`'s runs over these:
    # the ratio of throughputs.
    def speed(runs, other)
      return nil unless @groups[other]

      Stats.ratio(Stats.median(@groups[other].map { _1["seconds"] }), Stats.median(runs.map { _1["seconds"] }))
    end
  end
end
