# frozen_string_literal: true

module LimitFetchBench
  # The keyed section over its runs: the distinct-key throughput (as the
  # throughput section's, the keyed variant's ratio taken to the unkeyed
  # one), the hot-key workload per variant, and what distinct keys left in
  # Redis.
  class KeyedSummary
    HOT_MEDIANS = %w[
      executed dropped rescheduled commands_per_executed_job round_trips_per_executed_job redis_cpu_us_per_executed_job
    ].freeze
    MOST = %w[hot_max_running cold_max_running max_parked].freeze

    def initialize(runs)
      @groups = runs.select { _1["section"] == "keyed" }.group_by { _1["variant"] }
    end

    def to_h
      return {} if @groups.empty?

      {"distinct" => distinct, "hot" => hot, "keys" => @groups["keys"]&.first&.slice("jobs", "before", "after",
        "new_keys", "new_key_names")}
    end

    private

    def distinct
      present(KeyedVariants::DISTINCT).to_h do |key|
        variant = Variant[key]
        [key, ThroughputSummary.new(variant, @groups[key], @groups[variant.baseline]).to_h]
      end
    end

    def hot = present(KeyedVariants::HOT + KeyedVariants::SEEDS).to_h { [_1, hot_row(Variant[_1], @groups[_1])] }

    def present(keys) = keys.select { @groups[_1] }

    def hot_row(variant, runs)
      {"label" => variant.label, "runs" => runs.size, "jobs" => runs.first["jobs"],
       "hot_limit" => runs.first["hot_limit"], "seconds" => Stats.spread(runs.map { _1["seconds"] }),
       "vs_none" => speed(runs, "hot_none"), "vs_queue2" => speed(runs, "hot_queue2")}
        .merge(first_starts(runs), most(runs), medians(runs))
    end

    def most(runs) = MOST.to_h { |key| [key, runs.map { _1[key] }.max] }

    def medians(runs) = HOT_MEDIANS.to_h { |key| [key, Stats.median(runs.map { _1[key] })] }

    # The other tenants' first starts: percentiles over all runs' tenants,
    # and the spread of the runs' p99.
    def first_starts(runs)
      firsts = runs.flat_map { _1["cold_first_start_s"] }
      {"cold_first_start_s" => {"p50" => Stats.percentile(firsts, 50), "p99" => Stats.percentile(firsts, 99)},
       "run_p99_s" => Stats.spread(runs.map { Stats.percentile(_1["cold_first_start_s"], 99) })}
    end

    # Median time until every job was done, of `other`'s runs over these:
    # the ratio of throughputs.
    def speed(runs, other)
      return nil unless @groups[other]

      Stats.ratio(Stats.median(@groups[other].map { _1["seconds"] }), Stats.median(runs.map { _1["seconds"] }))
    end
  end
end
