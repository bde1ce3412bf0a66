# frozen_string_literal: true

module LimitFetchBench
  # The rate section's idle variant over its runs: Redis commands per
  # second and CPU while jobs are parked, against the blocking wait of the
  # same process with nothing parked (per run, and over all runs: their
  # ratio, and whether parked jobs cost no more), the commands each phase
  # ran (per second, over all runs), and the pickup latency as windows open
  # (percentiles over all runs' openings) against its target.
  class RateIdleSummary
    COSTS = %w[commands_per_s process_cpu_percent redis_cpu_percent].freeze
    TARGET_P99_MS = 5.0

    def initialize(variant, runs)
      @variant = variant
      @runs = runs
    end

    def to_h
      {"label" => @variant.label, "runs" => @runs.size, "concurrency" => @runs.first["concurrency"]}
        .merge(waits, pickup)
    end

    private

    # Waiting, with nothing parked (the blocking wait) and with jobs parked:
    # per run, and over all runs' windows ("pooled": all their commands over
    # all their seconds, which evens out the heartbeats, Sidekiq's every
    # 10 s and the gem's every 15 s, that a short window holds or not).
    def waits
      mix = %w[blocking parked].to_h { [_1, mix(_1)] }
      {"blocking" => costs("blocking"), "parked" => costs("parked"),
       "parked_jobs_min" => @runs.map { _1["parked"]["parked_after"] }.min,
       "parked_jobs_expected" => RateVariants::PARKED_JOBS - 1, "command_mix" => mix}.merge(pooled(mix))
    end

    def pooled(mix)
      pooled = mix.transform_values { _1.values.sum }
      {"pooled_commands_per_s" => pooled, "commands_ratio" => Stats.ratio(pooled["parked"], pooled["blocking"]),
       "no_more_than_blocking" => pooled["parked"] <= pooled["blocking"]}
    end

    def costs(phase) = COSTS.to_h { |key| [key, Stats.spread(@runs.map { _1[phase][key] })] }

    # Commands per second of each name over all runs' windows of `phase`,
    # the most frequent first.
    def mix(phase)
      seconds = @runs.sum { _1[phase]["seconds"] }
      totals = Hash.new(0)
      @runs.each { |run| run[phase]["commands"].each { |name, calls| totals[name] += calls } }
      totals.sort_by { |_, calls| -calls }.to_h { |name, calls| [name, calls / seconds] }
    end

    # Pickup latency over all runs' openings (nil where a run could not work
    # them out: "runs_without_latencies"), the most starts of the paced
    # class within a window (by Redis's clock), and the cost per opening.
    def pickup
      paces = @runs.map { _1["pace"] }
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

    def percentiles(values)
      {"min" => values.min, "p50" => Stats.percentile(values, 50), "p95" => Stats.percentile(values, 95),
       "p99" => Stats.percentile(values, 99), "max" => values.max}
    end
  end
end
