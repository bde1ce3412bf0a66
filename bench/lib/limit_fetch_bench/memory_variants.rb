# frozen_string_literal: true

module LimitFetchBench
  # The variants of the memory section (bin/bench --only memory): one real
  # `sidekiq` process of THREADS threads (CliApp) per run, with the gem (its
  # app requires sidekiq-limit_fetch) or without it (Sidekiq's BasicFetch,
  # the gem not loaded), running no-op jobs; its RSS is read after each of
  # --memory-jobs's counts (MemoryRun). With --baseline the gem's variant
  # has a twin, whose app takes the baseline's gem.
  module MemoryVariants
    THREADS = 10
    # Jobs pushed at once (at most BACKLOG waiting), and the seconds from
    # the last job done to the reading (MemoryRun).
    BATCH = 10_000
    BACKLOG = 20_000
    SETTLE = 1.0

    DEFAULTS = {limit: nil, concurrency: THREADS, job_seconds: 0, workload: :memory}.freeze

    ALL = [
      Variant.new(key: "memory_basic", label: "BasicFetch (the gem not loaded)", fetch: :basic, baseline: nil,
        **DEFAULTS),
      Variant.new(key: "memory_gem", label: "LimitFetch, no limit", fetch: :limit_fetch, baseline: "memory_basic",
        **DEFAULTS)
    ].to_h { [_1.key, _1] }.freeze

    KEYS = ALL.keys.freeze

    module_function

    # What a measuring process of the section needs beside the usual: its
    # jobs and the time they may take, those of the last checkpoint.
    def spec(options)
      jobs = options.memory_jobs.last
      {"checkpoints" => options.memory_jobs, "processes" => 1, "threads" => THREADS, "jobs" => jobs,
       "timeout" => 60 + (jobs * 0.005)}
    end
  end
end
