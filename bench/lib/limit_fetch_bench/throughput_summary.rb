# frozen_string_literal: true

module LimitFetchBench
  # One throughput variant over its runs: jobs/s (median, min-max, ratio to
  # its BasicFetch baseline's median and, with --baseline, to its twin's),
  # and the medians of the costs per job.
  class ThroughputSummary
    PER_JOB = %w[round_trips_per_job commands_per_job ruby_cpu_us_per_job redis_cpu_us_per_job].freeze

    def initialize(variant, runs, baseline_runs, twin_runs = nil)
      @variant = variant
      @runs = runs
      @baseline = baseline_runs
      @twin = twin_runs
    end

    def to_h
      {"label" => @variant.label, "jobs" => @runs.first["jobs"], "runs" => @runs.size, "limit" => @variant.limit,
       "slow" => @variant.slow?, "baseline" => @variant.baseline, "jobs_per_s" => Stats.spread(values("jobs_per_s")),
       "utilisation" => Stats.spread(values("utilisation").compact), "round_trips" => side_medians}
        .merge(ratios, concurrency, per_job)
    end

    def per_job = PER_JOB.to_h { [_1, Stats.median(values(_1))] }

    private

    def ratio(other)
      return nil unless other

      Stats.ratio(Stats.median(values("jobs_per_s")), Stats.median(other.map { _1["jobs_per_s"] }))
    end

    def ratios = {"ratio" => ratio(@baseline), **(@twin ? {"rev_ratio" => ratio(@twin)} : {})}

    def values(key) = @runs.map { _1[key] }

    # The most jobs of one queue seen in flight, and running, in any run.
    def concurrency
      %w[max_in_flight max_running].to_h { |key| [key, @runs.map { _1[key].values.max || 0 }.max] }
    end

    # Round trips per job, Ruby's and the Rust core's apart.
    def side_medians
      %w[ruby rust].to_h { |side| [side, Stats.median(@runs.map { _1["round_trips"][side].fdiv(_1["jobs"]) })] }
    end
  end
end
