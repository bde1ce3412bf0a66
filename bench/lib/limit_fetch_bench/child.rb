# frozen_string_literal: true

require "securerandom"
require "sidekiq/launcher"
require "sidekiq/limit_fetch"

require "limit_fetch_bench/gem_keys"
require "limit_fetch_bench/round_trips"
require "limit_fetch_bench/redis_probe"
require "limit_fetch_bench/window"
require "limit_fetch_bench/bench_job"
require "limit_fetch_bench/recorder"
require "limit_fetch_bench/fetch_hooks"
require "limit_fetch_bench/embedded_sidekiq"
require "limit_fetch_bench/throughput_run"
require "limit_fetch_bench/slot_handoff"
require "limit_fetch_bench/idle_run"
require "limit_fetch_bench/fetch_scenario"
require "limit_fetch_bench/fetch_cost_run"
require "limit_fetch_bench/tenant_jobs"
require "limit_fetch_bench/keyed_pusher"
require "limit_fetch_bench/tenant_tracker"
require "limit_fetch_bench/seed_reschedule"
require "limit_fetch_bench/seed_lock"
require "limit_fetch_bench/parked_sampler"
require "limit_fetch_bench/keyed_throughput_run"
require "limit_fetch_bench/hot_key_run"
require "limit_fetch_bench/keys_run"
require "limit_fetch_bench/rate_jobs"
require "limit_fetch_bench/rate_pusher"
require "limit_fetch_bench/rate_window"
require "limit_fetch_bench/rate_tracker"
require "limit_fetch_bench/starts_sampler"
require "limit_fetch_bench/seed_rate"
require "limit_fetch_bench/pace_log"
require "limit_fetch_bench/rate_throughput_run"
require "limit_fetch_bench/rate_hot_run"
require "limit_fetch_bench/rate_idle_run"
require "limit_fetch_bench/back_off_run"
require "limit_fetch_bench/fair_run"
require "limit_fetch_bench/memory_run"

module LimitFetchBench
  # A measuring process (bench/run_one.rb): runs the one measurement its spec
  # names and prints "RESULT <json>". Its standard output carries only its
  # conversation with the driver; anything else written there (a default
  # Sidekiq logger, say) goes to standard error, the run's log. LimitFetch
  # runs with the defaults users get; poll_range and fetch_timeout are set to
  # their defaults explicitly and reported. The keyed section's runs need
  # a gem with job limits (a baseline's may predate them: bin/bench
  # --baseline gives such a one's keyed variants no twins); the rate
  # section's, a gem with rates (a baseline's since 433bb5f).
  module Child
    RUNS = {"throughput" => ThroughputRun, "idle" => IdleRun, "fetch" => FetchCostRun,
            "distinct" => KeyedThroughputRun, "hot" => HotKeyRun, "keys" => KeysRun,
            "rate_throughput" => RateThroughputRun, "rate_hot" => RateHotRun, "rate_idle" => RateIdleRun,
            "back_off" => BackOffRun, "fair" => FairRun, "memory" => MemoryRun}.freeze
    KEYED = %w[distinct hot keys].freeze

    class << self
      # Where the driver reads READY and RESULT lines.
      attr_reader :protocol
    end

    module_function

    def main(argv)
      spec = JSON.parse(argv.fetch(0))
      install(spec)
      job_limits!(spec)
      rates!(spec)
      result = RUNS.fetch(spec.fetch("kind")).new(spec).run
      Child.protocol.puts "RESULT #{JSON.generate(result)}"
      0
    rescue Failure => e
      warn "bin/bench: #{e.message}"
      1
    end

    def job_limits!(spec)
      return if !KEYED.include?(spec["kind"]) || defined?(Sidekiq::LimitFetch::JobLimits)

      raise Failure, "#{spec["variant"]}: the gem loaded from #{spec["lib"] || "this checkout's lib"} has no job " \
                     "limits (Sidekiq::LimitFetch::JobLimits), which the keyed section needs"
    end

    def rates!(spec)
      return if !RateVariants::KINDS.include?(spec["kind"]) || defined?(Sidekiq::LimitFetch::Rates)

      raise Failure, "#{spec["variant"]}: the gem loaded from #{spec["lib"] || "this checkout's lib"} has no rates " \
                     "(Sidekiq::LimitFetch::Rates), which the rate section needs"
    end

    # Data format 2 in force, as in a fleet of this release past its first
    # census (src/format.rs), which comes a heartbeat expiry after a
    # capsule's boot: longer than a run. "2:1": since long ago, the moves of
    # a switch over. A gem that knows no data format (a baseline's) never
    # reads the key.
    def data_format!(spec)
      return unless GemKeys.const_defined?(:FORMAT)

      redis = RedisClient.new(url: spec.fetch("redis_url"))
      redis.call("SET", GemKeys::FORMAT, "2:1")
    ensure
      redis&.close
    end

    def install(spec)
      data_format!(spec)
      @protocol = $stdout.dup.tap { _1.sync = true }
      $stdout.reopen($stderr)
      Sidekiq::LimitFetch.configuration.merge!(Sidekiq::LimitFetch::DEFAULTS.slice(:poll_range, :fetch_timeout))
      RoundTrips.install
      FetchHooks.install
    end
  end
end
