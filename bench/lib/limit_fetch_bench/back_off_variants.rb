# frozen_string_literal: true

module LimitFetchBench
  # The variants of the back_off section (bin/bench --only back_off): one
  # tenant's jobs calling the simulated downstream (LimitFetchTools::
  # Downstream), which admits `capacity` calls in flight per tenant and
  # answers 429 with Retry-After beyond, run by PROCESSES real `sidekiq`
  # processes of THREADS threads (CliApp), with the tenant's jobs
  # limited by an adaptive concurrency (key: and 1..16), by a fixed one
  # (16), or not at all. Each job that hears 429 raises BackOff where the
  # gem has it, else fails and is retried by Sidekiq (BackOffJobs); the
  # adaptive variant needs the gem's BackOff, and is skipped without it.
  # Not twinned with --baseline. `job` names each variant's job class.
  module BackOffVariants
    PROCESSES = 2
    THREADS = 10
    TENANT = "partner-tenant"

    DEFAULTS = {fetch: :limit_fetch, workload: :back_off, limit: nil, concurrency: THREADS, job_seconds: 0,
                baseline: nil, keyed: true}.freeze

    def self.variant(key, label, **) = Variant.new(key:, label:, **DEFAULTS, **)

    ALL = [
      variant("back_off_adaptive", "LimitFetch, key: with concurrency: 1..16 (adaptive)"),
      variant("back_off_fixed16", "LimitFetch, key: with concurrency: 16 (fixed)"),
      variant("back_off_none", "LimitFetch, no limit", keyed: false)
    ].to_h { [_1.key, _1] }.freeze

    JOBS = {"back_off_adaptive" => "LimitFetchBench::AdaptiveApiJob", "back_off_fixed16" => "LimitFetchBench::FixedApiJob",
            "back_off_none" => "LimitFetchBench::UnlimitedApiJob"}.freeze
    KEYS = ALL.keys.freeze

    module_function

    # The variants that run in round `round`: each in the first
    # `options.back_off_runs` rounds.
    def of_round(round, options) = round <= options.back_off_runs ? KEYS : []

    def job(key) = JOBS.fetch(key)

    # The phases of the downstream's capacity: [[capacity, seconds], ...];
    # the last lasts until every job is done.
    def phases(options)
      options.back_off_phases ? parse_phases(options.back_off_phases) : [[options.back_off_capacity, nil]]
    end

    # [[capacity, seconds], ...] from ["4:10", "2:10", "8"] (--back-off-phases);
    # the last phase's seconds may be left out (nil: until done).
    def parse_phases(list)
      list.each_with_index.map do |phase, index|
        capacity, seconds = phase.split(":", 2)
        raise OptionParser::InvalidArgument, "--back-off-phases: #{phase.inspect} is not CAPACITY:SECONDS" unless
          capacity.to_s.match?(/\A[1-9]\d*\z/) &&
          (seconds.to_s.match?(/\A\d+(\.\d+)?\z/) || (index == list.size - 1 && seconds.nil?))

        [capacity.to_i, seconds&.to_f]
      end
    end

    # What a measuring process of the section needs beside the usual.
    def spec(options, jobs)
      {"job_ms" => options.back_off_job_ms, "retry_after" => options.back_off_retry_after,
       "phases" => phases(options), "processes" => PROCESSES, "threads" => THREADS, "tenant" => TENANT,
       "jobs" => jobs, "timeout" => options.back_off_timeout}
    end
  end
end
