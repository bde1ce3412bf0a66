# frozen_string_literal: true

module LimitFetchBench
  # The rate section's idle variants over their runs: Redis commands per
  # second and CPU while jobs are parked (rate_idle), against the blocking
  # wait of the same process with nothing parked (rate_idle_blocking): per
  # run, and over all runs (their ratio, and whether parked jobs cost no
  # more); the commands each ran (per second, over all runs); and the
  # pickup latency as windows open (percentiles over all runs' openings)
  # against its target.
  class RateIdleSummary
    COSTS = %w[commands_per_s process_cpu_percent redis_cpu_percent].freeze
    TARGET_P99_MS = 5.0

    # `phases`: {"blocking" => runs, "parked" => runs}, either maybe empty.
    def initialize(phases)
      @phases = phases
      @parked = phases["parked"]
    end

    def to_h
      mix = @phases.transform_values { mix(_1) }
      {"runs" => @phases.transform_values(&:size), "concurrency" => @phases.values.flatten.first["concurrency"],
       "costs" => @phases.transform_values { costs(_1) }, "command_mix" => mix}.merge(parked, pooled(mix), pickup)
    end

    # Jobs parked, and how late a window started at worst (a run not settled
    # in time, on a loaded machine).
    def parked
      {"parked_jobs_min" => @parked.map { _1["idle"]["parked_after"] }.min,
       "parked_jobs_expected" => RateVariants::PARKED_JOBS - 1,
       "late_max" => @phases.values.flatten.map { _1["idle"]["late"] || 0 }.max}
    end

    private

    def costs(runs) = COSTS.to_h { |key| [key, Stats.spread(runs.map { _1["idle"][key] })] }

    # Commands per second of each name over all the runs' windows, the most
    # frequent first ("pooled": all their commands over all their seconds).
    def mix(runs)
      seconds = runs.sum { _1["idle"]["seconds"] }
      totals = Hash.new(0)
      runs.each { |run| run["idle"]["commands"].each { |name, calls| totals[name] += calls } }
      totals.sort_by { |_, calls| -calls }.to_h { |name, calls| [name, calls / seconds] }
    end

    # nil where a variant did not run.
    def pooled(mix)
      pooled = @phases.to_h { |phase, runs| [phase, runs.empty? ? nil : mix[phase].values.sum] }
      both = pooled.values.none?(&:nil?)
      {"pooled_commands_per_s" => pooled,
       "commands_ratio" => both ? Stats.ratio(pooled["parked"], pooled["blocking"]) : nil,
       "no_more_than_blocking" => both ? pooled["parked"] <= pooled["blocking"] : nil}
    end

    # Pickup latency over all runs' openings (nil where a run could not work
    # them out: "runs_without_latencies"), the most starts of the paced
    # class within a window (by Redis's clock), and the cost per opening.
    def pickup
      paces = @parked.map { _1["pace"] }
      return {} if paces.empty?

      {"period" => paces.first["period"], "most_in_window" => paces.map { _1["most_in_window"] }.max,
       "commands_per_opening" => Stats.median(paces.map { _1["commands_per_opening"] }),
       "scripts_per_opening" => Stats.median(paces.map { _1["scripts_per_opening"] })}.merge(latency(paces))
    end

    def latency(paces)
      known = paces.filter_map { _1["latencies_ms"] }
      latencies = known.flatten
      p99 = Stats.percentile(latencies, 99)
      {"openings" => latencies.size, "runs_without_latencies" => paces.size - known.size,
       "latency_ms" => percentiles(latencies), "run_p99_ms" => Stats.spread(known.map { Stats.percentile(_1, 99) }),
       "fetch_latency_ms" => percentiles(paces.flat_map { _1["fetch_latencies_ms"] || [] }),
       "target_p99_ms" => TARGET_P99_MS, "p99_within_target" => p99 && p99 <= TARGET_P99_MS}
    end

    def percentiles(values) = Stats.percentiles(values, "min", "p50", "p95", "p99", "max")
  end
end
