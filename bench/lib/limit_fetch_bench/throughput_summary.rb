# frozen_string_literal: true

module LimitFetchBench
  # One throughput variant over its runs: jobs/s (median, min-max, ratio to
  # its BasicFetch baseline's median and, with --baseline, to its twin's),
  # the medians of the costs per job, the ratios of its process and Redis
  # CPU per job to its BasicFetch baseline's (and its twin's), and its Redis
  # ceiling: the jobs per second one Redis core can serve at its Redis CPU
  # per job (1e6 / µs), with its ratio to BasicFetch's.
  class ThroughputSummary
    PER_JOB = %w[round_trips_per_job commands_per_job process_cpu_us_per_job redis_cpu_us_per_job].freeze
    # Ratio key prefix => per-job cost.
    CPU = {"process_cpu" => "process_cpu_us_per_job", "redis_cpu" => "redis_cpu_us_per_job"}.freeze

    # The jobs per second one Redis core can serve at `micros` µs of its CPU
    # per job; nil without a figure.
    def self.ceiling(micros) = Stats.ratio(1e6, micros)

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
        .merge(ratios, concurrency, costs)
    end

    def per_job = PER_JOB.to_h { [_1, Stats.median(values(_1))] }

    private

    # The costs per job and the Redis ceiling.
    def costs = per_job.merge(ceiling)

    # Of medians: this variant's over the other runs'.
    def ratio(key, other)
      return nil unless other

      Stats.ratio(Stats.median(values(key)), Stats.median(other.map { _1[key] }))
    end

    # "ratio", "process_cpu_ratio", "redis_cpu_ratio" to BasicFetch; the same
    # with "rev_ratio" to the twin, if any.
    def ratios
      {"ratio" => ratio("jobs_per_s", @baseline), **cpu_ratios("ratio", @baseline),
       **(@twin ? {"rev_ratio" => ratio("jobs_per_s", @twin), **cpu_ratios("rev_ratio", @twin)} : {})}
    end

    def cpu_ratios(name, other) = CPU.to_h { |prefix, key| ["#{prefix}_#{name}", ratio(key, other)] }

    def ceiling
      own = ThroughputSummary.ceiling(Stats.median(values("redis_cpu_us_per_job")))
      base = @baseline && ThroughputSummary.ceiling(Stats.median(@baseline.map { _1["redis_cpu_us_per_job"] }))
      {"redis_ceiling_jobs_per_s" => own, "redis_ceiling_ratio" => Stats.ratio(own, base)}
    end

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
