# frozen_string_literal: true

require "limit_fetch_bench/fair_figures"
require "limit_fetch_bench/fair_tally"
require "limit_fetch_bench/fair_driver"

module LimitFetchBench
  # The fair section's scenarios, on `sidekiq` processes already running
  # whose classes FairJobs made, driven by `driver` (FairDriver). Each
  # pushes its tenants' jobs, waits for what it measures, then lets the rest
  # drain (FairJobs' fast key) and returns its figures (FairFigures; every
  # time by Redis's clock) with its tally (FairTally). Sizes (SIZES' keys):
  # the issue's by default; a spec gives smaller ones.
  #
  # - arrivals: tenant a alone with `alone_jobs`; `alone_seconds` after its
  #   push, b and c push `arrivals` each. a: the class's slots busy from
  #   `settle` s after a's push until b's; b: each tenant's slots over the
  #   `window` s from `settle` s after b and c pushed (and over the time all
  #   three had work, from then until b or c was done); once b and c are
  #   done, the seconds until a held `full` slots again (averaged over the
  #   next `regain_window` s), looked for during `regain_wait` s.
  # - weighted: gold 3 × `weighted_jobs`, then b and c `weighted_jobs` each
  #   (enough that all three still have work at the window's end, whatever
  #   the split; what is left drains fast); each tenant's slots over the
  #   `weighted_window` s from `settle` s after the push.
  # - hot: one tenant's `hot_jobs`, then `tenants` × `tenant_jobs`
  #   interleaved; each tenant's first start from the start of their push
  #   (their first jobs are its first), waited for `first_start_wait` s (a
  #   tenant that started only after is not counted as started).
  # - cost: `cost_jobs` not recorded, a's half then b's and c's quarter each;
  #   Redis's CPU and commands per job (RedisProbe; by command too) from
  #   the push until all are done.
  class FairScenarios
    # fair_share's scenarios (a run spec's "scenarios": some of them), each
    # with its class (FairJobs).
    SCENARIOS = {"arrivals" => "FairJob", "weighted" => "WeightedJob", "hot" => "FairJob"}.freeze
    SIZES = {"job_ms" => 50, "slots" => 10, "full" => 9.5, "settle" => 1.0, "alone_jobs" => 5_000,
             "alone_seconds" => 6.0, "arrivals" => 300, "window" => 5.0, "regain_window" => 0.5,
             "regain_wait" => 3.0, "weighted_jobs" => 1_000, "weighted_window" => 10.0, "hot_jobs" => 20_000,
             "tenants" => 100, "tenant_jobs" => 50, "first_start_wait" => 10.0, "cost_jobs" => 2_000,
             "drain_timeout" => 180.0}.freeze

    def self.sizes(given) = SIZES.merge(given || {})

    def initialize(driver, sizes)
      @driver = driver
      @sizes = sizes
    end

    def arrivals(job)
      a_pushed = @driver.push(job, "arrivals", [["a", size("alone_jobs")]]).last
      @driver.pause_until(a_pushed + size("alone_seconds"))
      others = {"b" => size("arrivals"), "c" => size("arrivals")}
      bc_start, bc_pushed = @driver.push(job, "arrivals", others.to_a)
      @driver.wait_done("arrivals", others)
      times = {"a_pushed" => a_pushed, "bc_start" => bc_start, "bc_pushed" => bc_pushed,
               "fast_at" => @driver.fast_after("arrivals", size("regain_wait"))}
      with_tally("arrivals") { FairFigures.arrivals(_1, times, @sizes) }
    end

    def weighted(job)
      jobs = size("weighted_jobs")
      from = @driver.push(job, "weighted", [["gold", 3 * jobs], ["b", jobs], ["c", jobs]]).last + size("settle")
      to = from + size("weighted_window")
      fast_at = @driver.fast_after("weighted", to - @driver.now)
      with_tally("weighted") { FairFigures.shares_of(_1, %w[gold b c], from..to, fast_at) }
    end

    def hot(job)
      @driver.push(job, "hot", [["hot", size("hot_jobs")]])
      tenants = Array.new(size("tenants")) { format("t%03d", _1 + 1) }
      push = @driver.push(job, "hot", tenants.map { [_1, 1] } * size("tenant_jobs"))
      @driver.wait_started("hot", tenants, size("first_start_wait"))
      fast_at = @driver.fast_after("hot", 0)
      with_tally("hot") { FairFigures.first_start_figures(_1, tenants, push, fast_at) }
    end

    # Redis's CPU per job (`probe`: RedisProbe) of `cost_jobs` of `job`.
    def cost(job, probe)
      jobs = size("cost_jobs")
      probe.reset
      started = @driver.now
      @driver.push(job, "cost", [["a", jobs / 2], ["b", jobs / 4], ["c", jobs / 4]], record: false)
      @driver.wait_done("cost")
      cost_figures(probe.read, jobs, @driver.now - started).merge("tally" => @driver.tally("cost"))
    end

    private

    def size(name) = @sizes.fetch(name)

    # The figures the block makes of the run's records (once all its jobs
    # are done), with its tally.
    def with_tally(run) = yield(@driver.records(run)).merge("tally" => @driver.tally(run))

    def cost_figures(used, jobs, seconds)
      {"jobs" => jobs, "seconds" => seconds.round(3), "redis_cpu_us_per_job" => used["cpu"] * 1e6 / jobs,
       "commands_per_job" => used["calls"].values.sum.fdiv(jobs),
       "by_command" => used["calls"].to_h { |name, calls| [name, calls.fdiv(jobs).round(2)] }}
    end
  end
end
