# frozen_string_literal: true

module LimitFetchBench
  # The variants of the rate section (bin/bench --only rate), by workload:
  # - rate_throughput: the same no-op jobs under a class rate that never
  #   binds (CLASS_RATE: far above any throughput, so every job is taken,
  #   and every start counted), under a queue rate that never binds, with no
  #   limit, and on BasicFetch (the usual reference);
  # - rate_hot: one tenant's backlog with a key rate (HOT_RATE) queued ahead
  #   of 100 other tenants' jobs, on LimitFetch (parking behind the rate)
  #   and on BasicFetch with a reschedule-based limiter (SeedRate);
  # - rate_idle: windows opening on an idle process, one job each: how soon
  #   the job starts once its window opens, and what an opening costs.
  # Every variant runs every round but the limiter, which runs in the first
  # only (ONCE: slow, and not the gem), as the keyed section's seeds do;
  # with --baseline, the gem's variants (TWINNED) have twins (a baseline
  # older than 433bb5f has no rates: its twins would fail).
  module RateVariants
    # [limit, period in seconds]
    CLASS_RATE = [10_000_000, 60].freeze
    HOT_RATE = [50, 1].freeze
    # Pickup: a window a fifth of a second long, so that ~50 openings take ~10 s.
    PACED_RATE = [1, 0.2].freeze
    # Seconds from an idle run's start to its first push: its fetchers asleep.
    IDLE_SETTLE = 1.0

    DEFAULTS = {limit: nil, concurrency: 10, job_seconds: 0, baseline: nil}.freeze

    # `options`: keyed, rate, guard, baseline.
    def self.variant(key, label, fetch, workload, **options)
      Variant.new(key:, label:, fetch:, workload:, **DEFAULTS.merge(options))
    end

    def self.rate_text((limit, period)) = "#{limit.to_s.reverse.scan(/\d{1,3}/).join(",").reverse}/#{period} s"

    ALL = [
      variant("rate_basic", "BasicFetch", :basic, :rate_throughput),
      variant("rate_none", "LimitFetch, no limit", :limit_fetch, :rate_throughput, baseline: "rate_basic"),
      variant("rate_class", "LimitFetch, class rate #{rate_text(CLASS_RATE)} (not binding)", :limit_fetch,
        :rate_throughput, rate: :class, baseline: "rate_basic"),
      variant("rate_queue", "LimitFetch, queue rate #{rate_text(CLASS_RATE)} (not binding)", :limit_fetch,
        :rate_throughput, rate: :queue, baseline: "rate_basic"),
      variant("rate_hot_gem", "LimitFetch, key rate #{rate_text(HOT_RATE)} (parking)", :limit_fetch, :rate_hot,
        keyed: true, rate: :key),
      variant("rate_hot_reschedule", "BasicFetch + a counter per tenant and #{HOT_RATE[1]} s window, " \
                                     "reschedule 1 s later over #{HOT_RATE[0]}", :basic, :rate_hot,
        guard: :rate_reschedule),
      variant("rate_idle", "LimitFetch, windows opening, fetchers idle", :limit_fetch, :rate_idle, rate: :class)
    ].to_h { [_1.key, _1] }.freeze

    THROUGHPUT = %w[rate_basic rate_none rate_class rate_queue].freeze
    HOT = %w[rate_hot_gem rate_hot_reschedule].freeze
    IDLE = %w[rate_idle].freeze
    KEYS = (THROUGHPUT + HOT + IDLE).freeze
    ONCE = %w[rate_hot_reschedule].freeze
    TWINNED = %w[rate_none rate_class rate_queue rate_hot_gem rate_idle].freeze
    # The measuring process's kinds of run (Child::RUNS).
    KINDS = %w[rate_throughput rate_hot rate_idle].freeze

    module_function

    # The variants that run in round `round`.
    def of_round(round) = round == 1 ? KEYS : KEYS - ONCE

    # The jobs a run of `workload` pushes (the paced ones, for the idle).
    def jobs(workload, options)
      case workload
      when :rate_hot then options.rate_hot_jobs + KeyedVariants::COLD_JOBS
      when :rate_idle then options.rate_openings + 1
      else options.rate_jobs
      end
    end

    # What a measuring process of the section needs beside the usual, and
    # its timeout.
    def spec(options, variant, jobs)
      {"rate_hot_jobs" => options.rate_hot_jobs, "openings" => options.rate_openings,
       "timeout" => timeout(variant, options, jobs)}
    end

    # Seconds a run may take before the driver gives up on it.
    def timeout(variant, options, jobs) = 60 + (jobs * 0.005) + workload_seconds(variant.workload, options)

    # Four times what the rates let the workload take, at least.
    def workload_seconds(workload, options)
      case workload
      when :rate_hot then 4 * options.rate_hot_jobs * HOT_RATE[1].fdiv(HOT_RATE[0])
      when :rate_idle then 4 * (3 + (options.rate_openings * PACED_RATE[1]))
      else 0
      end
    end
  end
end
