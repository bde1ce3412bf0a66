# frozen_string_literal: true

module LimitFetchBench
  # Command-line options of bin/bench.
  Options = Data.define(:jobs, :delayed_jobs, :slow_jobs, :runs, :idle_seconds, :fetch_iterations,
    :deep_queue, :wide_queues, :delay_us, :hot_jobs, :keys, :rate_jobs, :rate_hot_jobs, :rate_openings,
    :back_off_jobs, :back_off_job_ms, :back_off_capacity, :back_off_retry_after,
    :back_off_phases, :back_off_runs, :back_off_timeout, :fair_runs, :fair_declaration, :fair_weighted_declaration,
    :fair_sizes, :memory_jobs, :fair_form,
    :sections, :output, :quick, :baseline)

  class Options
    SECTIONS = %w[throughput delayed idle fetch keyed rate back_off fair memory].freeze

    DEFAULTS = {jobs: 50_000, delayed_jobs: nil, slow_jobs: 1_500, runs: 5, idle_seconds: 10.0,
                fetch_iterations: 2_000, deep_queue: 1_000_000, wide_queues: 200, delay_us: 500,
                hot_jobs: 100_000, keys: 10_000, rate_jobs: 20_000, rate_hot_jobs: 300, rate_openings: 20,
                back_off_jobs: 400, back_off_job_ms: 50, back_off_capacity: 4,
                back_off_retry_after: 0.2, back_off_phases: nil, back_off_runs: 1, back_off_timeout: 60.0,
                fair_runs: 1, fair_declaration: nil, fair_weighted_declaration: nil, fair_sizes: nil,
                memory_jobs: [20_000], fair_form: "class",
                sections: SECTIONS, output: RESULTS, quick: false, baseline: nil}.freeze

    QUICK = {jobs: 5_000, slow_jobs: 500, runs: 3, idle_seconds: 3.0, fetch_iterations: 500, hot_jobs: 10_000,
             rate_jobs: 5_000, rate_hot_jobs: 100, rate_openings: 17}.freeze

    BANNER = "Usage: bin/bench [options]\n\nMeasures Sidekiq::LimitFetch against Sidekiq's BasicFetch on a Redis " \
             "of its own and writes\nbench/results/latest.{json,md}.\n\n"

    # [key, switch, type, description lines...]
    FLAGS = [
      [:jobs, "--jobs N", Integer, "no-op jobs per throughput run (default 50000; --quick 5000)"],
      [:delayed_jobs, "--delayed-jobs N", Integer, "no-op jobs per run with ~1 ms added RTT (default jobs / 5)"],
      [:slow_jobs, "--slow-jobs N", Integer, "10 ms jobs per run (default 1500; --quick 500)"],
      [:runs, "--runs R", Integer, "runs of every variant, alternated (default 5; --quick 3)"],
      [:idle_seconds, "--idle-seconds S", Float, "idle window and latency window (default 10; --quick 3)"],
      [:fetch_iterations, "--fetch-iterations N", Integer, "retrieve_work calls per fetch-cost run (default 2000)"],
      [:deep_queue, "--deep-queue N", Integer, "jobs queued for the deep fetch cost (default 1000000)"],
      [:wide_queues, "--wide-queues N", Integer, "queues of the wide fetch cost (default 200)"],
      [:delay_us, "--delay-us US", Integer, "added delay each way through the proxy, us (default 500)"],
      [:hot_jobs, "--hot-jobs N", Integer, "keyed: the hot tenant's jobs, queued ahead of 1000 others' (default",
       "100000; --quick 10000)"],
      [:keys, "--keys N", Integer, "keyed: distinct keys whose leftovers in Redis are counted (default 10000)"],
      [:rate_jobs, "--rate-jobs N", Integer, "rate: no-op jobs per run of a rate's fetch cost",
       "(default 20000; --quick 5000)"],
      [:rate_hot_jobs, "--rate-hot-jobs N", Integer, "rate: the hot tenant's jobs (50 a second), queued ahead of",
       "1000 others' (default 300; --quick 100)"],
      [:rate_openings, "--rate-openings N", Integer, "rate: windows opened per idle run, for pickup latency",
       "(default 20; --quick 17; at least 50 over all runs)"],
      [:back_off_jobs, "--back-off-jobs N", Integer, "back_off: the tenant's jobs (default 400)"],
      [:back_off_job_ms, "--back-off-job-ms MS", Integer, "back_off: the downstream holds a call MS (default 50)"],
      [:back_off_capacity, "--back-off-capacity N", Integer, "back_off: its calls in flight per tenant (default 4)"],
      [:back_off_phases, "--back-off-phases LIST", Array, "back_off: its capacity in phases CAPACITY:SECONDS,...,",
       "the last one's seconds optional (until done): 4:10,2:10,8:10 (overrides --back-off-capacity)"],
      [:back_off_retry_after, "--back-off-retry-after S", Float, "back_off: the Retry-After of its 429 (default 0.2)"],
      [:back_off_runs, "--back-off-runs R", Integer, "back_off: runs of every variant (default 1)"],
      [:back_off_timeout, "--back-off-timeout S", Float, "back_off: a run not done by then is reported (default 60)"],
      [:fair_runs, "--fair-runs R", Integer, "fair: runs of its Redis CPU variants (default 1)"],
      [:fair_declaration, "--fair-declaration RUBY", String, "fair: the class's limit_fetch declaration, Ruby",
       "(default: the fair: one where the gem accepts it, else a key limit of 4 under class_concurrency: 10)"],
      [:fair_weighted_declaration, "--fair-weighted-declaration RUBY", String, "fair: the weighted scenario's",
       "declaration (default: fair: with gold tenants weighing 3, else as --fair-declaration's default)"],
      [:fair_sizes, "--fair-sizes LIST", Array, "fair: the scenarios' sizes NAME=NUMBER,... (tenants=20,hot_jobs=2000;",
       "names: FairScenarios::SIZES)"],
      [:memory_jobs, "--memory-jobs LIST", Array, "memory: the jobs run when RSS is read, ascending N,N,...",
       "(default 20000; 300000,1000000: whether it stays flat)"],
      [:fair_form, "--fair-form FORM", FairVariants::FORMS, "fair: class (a class's slots, fair:; default) or queue",
       "(a queue's, fair_limits:, its jobs' tenants their keys; its plain twin a queue limit)"],
      [:output, "--output DIR", String, "where to write latest.{json,md} (default bench/results)"],
      [:baseline, "--baseline REV", String, "also every LimitFetch variant with the gem of git revision REV",
       "(built in tmp/bench-baseline), alternated with this checkout's; ratios to it"]
    ].freeze

    def self.parse(argv)
      values = DEFAULTS.dup
      explicit = {}
      parser(values, explicit).parse!(argv)
      values.merge!(QUICK.except(*explicit.keys)) if values[:quick]
      values[:delayed_jobs] ||= [values[:jobs] / 5, 1_000].max
      values[:memory_jobs] = memory_jobs(values[:memory_jobs])
      validate(values)
      new(**values)
    end

    def self.validate(values)
      BackOffVariants.parse_phases(values[:back_off_phases]) if values[:back_off_phases]
      FairVariants.parse_sizes(values[:fair_sizes]) if values[:fair_sizes]
      LimitFetchTools::Options.at_least(values, %i[jobs delayed_jobs slow_jobs runs fetch_iterations deep_queue
                                                   wide_queues hot_jobs keys rate_jobs rate_hot_jobs rate_openings
                                                   back_off_jobs back_off_job_ms back_off_capacity back_off_runs
                                                   fair_runs])
      LimitFetchTools::Options.positive(values, %i[idle_seconds back_off_retry_after
                                                   back_off_timeout])
    end

    def self.memory_jobs(list)
      jobs = list.map { Integer(_1, exception: false) }
      return jobs if jobs.all? { _1&.positive? } && jobs == jobs.sort.uniq

      raise OptionParser::InvalidArgument, "--memory-jobs: #{list.join(",")} is not ascending positive numbers"
    end

    def self.parser(values, explicit)
      LimitFetchTools::Options.parser(BANNER, FLAGS, values, explicit) do |opts|
        opts.on("--only LIST", Array, "sections to run: #{SECTIONS.join(",")} (default: all)") do |list|
          values[:sections] = sections(list)
        end
        opts.on("--quick", "5000 jobs, 500 slow jobs, 3 s windows, 500 fetch iterations, 10000 hot jobs;",
          "rate: 5000 jobs, 100 hot jobs, 17 openings per run") do |quick|
          values[:quick] = quick
        end
      end
    end

    def self.sections(list)
      unknown = list - SECTIONS
      raise OptionParser::InvalidArgument, "unknown section #{unknown.join(",")}" unless unknown.empty?

      list
    end

    def section?(name) = sections.include?(name)
  end
end
