# frozen_string_literal: true

module LimitFetchBench
  # The rate section's idle phases: Redis commands per second and CPU while
  # jobs are parked (rate_idle), against the blocking wait of the same
  # process with nothing parked (rate_idle_blocking): per run, and over all
  # runs ("pooled": all their commands over all their seconds; nil where a
  # phase did not run), with the commands each ran; and the pickup latency
  # as windows open (over all runs' openings; "runs_without_latencies":
  # runs that could not work them out) against its target.
  class RateIdleSummary
    include SummaryFigures

    TARGET_P99_MS = 5.0
    PERCENTILES = %w[min p50 p95 p99 max].freeze

    # `phases`: {"blocking" => runs, "parked" => runs}, either maybe empty.
    def initialize(phases)
      @phases = phases
      @all = phases.values.flatten
    end

    def to_h
      mix = @phases.transform_values { mix(_1) }
      {"runs" => @phases.transform_values(&:size), "concurrency" => @all.first["concurrency"],
       "costs" => @phases.transform_values { idle_costs(_1) }, "command_mix" => mix}.merge(parked, pooled(mix), pickup)
    end

    # Jobs parked, and how late a window started at worst (a run not settled
    # in time, on a loaded machine).
    def parked
      {"parked_jobs_min" => @phases["parked"].map { _1["idle"]["parked_after"] }.min,
       "parked_jobs_expected" => RateVariants::PARKED_JOBS - 1, "late_max" => @all.map { _1["idle"]["late"] || 0 }.max}
    end

    private

    def pooled(mix)
      pooled = @phases.to_h { |phase, runs| [phase, runs.empty? ? nil : mix[phase].values.sum] }
      parked, blocking = pooled.values_at("parked", "blocking")
      {"pooled_commands_per_s" => pooled, "commands_ratio" => Stats.ratio(parked, blocking),
       "no_more_than_blocking" => (parked <= blocking if parked && blocking)}
    end

    # Commands per second of each name over all the runs' windows, the most frequent first.
    def mix(runs)
      seconds = runs.sum { _1["idle"]["seconds"] }
      totals = runs.map { _1["idle"]["commands"] }.reduce({}) { |all, one| all.merge(one) { |_, a, b| a + b } }
      totals.sort_by { |_, calls| -calls }.to_h { |name, calls| [name, calls / seconds] }
    end

    # The pickup latency, the most starts of the paced class within a window (Redis's clock), the cost per opening.
    def pickup
      paces = @phases["parked"].map { _1["pace"] }
      return {} if paces.empty?

      {"period" => paces.first["period"], **most(paces, %w[most_in_window]),
       **medians(paces, %w[commands_per_opening scripts_per_opening]), **latency(paces)}
    end

    def latency(paces)
      known = paces.filter_map { _1["latencies_ms"] }
      all = known.flatten
      p99 = Stats.percentile(all, 99)
      {"openings" => all.size, "runs_without_latencies" => paces.size - known.size,
       "latency_ms" => Stats.percentiles(all, *PERCENTILES),
       "run_p99_ms" => Stats.spread(known.map { Stats.percentile(_1, 99) }),
       "fetch_latency_ms" => Stats.percentiles(paces.flat_map { _1["fetch_latencies_ms"] || [] }, *PERCENTILES),
       "target_p99_ms" => TARGET_P99_MS, "p99_within_target" => p99 && p99 <= TARGET_P99_MS}
    end
  end
end
