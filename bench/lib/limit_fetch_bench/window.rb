# frozen_string_literal: true

module LimitFetchBench
  # A measuring window: wall time, this process's CPU time (every thread's:
  # Ruby's and the Rust core's; LimitFetchBench.cpu_time), round trips, and
  # what Redis did (commands, CPU), from open to close.
  class Window
    # What being idle for `seconds` costs, measured over a window of
    # them: the window's figures, and Redis commands, process CPU and
    # Redis CPU per second.
    def self.idle_cost(probe, seconds)
      window = new(probe).open
      sleep seconds
      measured = window.close
      rates = {"commands_per_s" => measured["commands"].values.sum,
               "process_cpu_percent" => measured["process_cpu_s"] * 100,
               "redis_cpu_percent" => measured["redis_cpu_s"] * 100}
      measured.merge(rates.transform_values { _1 / measured["seconds"] })
    end

    def initialize(probe)
      @probe = probe
    end

    def open
      @probe.reset
      @round_trips = RoundTrips.snapshot
      @cpu = LimitFetchBench.cpu_time
      @started = LimitFetchBench.monotonic
      self
    end

    # Totals over the window, and per unit of work where `units` is given.
    def close(units = nil)
      seconds = LimitFetchBench.monotonic - @started
      cpu = LimitFetchBench.cpu_time - @cpu
      redis = @probe.read
      round_trips = round_trips_since
      totals(seconds, cpu, redis, round_trips).merge(units ? per_unit(units, cpu, redis, round_trips) : {})
    end

    private

    def round_trips_since
      now = RoundTrips.snapshot
      {"ruby" => now["ruby"] - @round_trips["ruby"], "rust" => now["rust"] - @round_trips["rust"]}
    end

    def totals(seconds, cpu, redis, round_trips)
      {"seconds" => seconds, "process_cpu_s" => cpu, "redis_cpu_s" => redis["cpu"], "commands" => redis["calls"],
       "command_usec" => redis["usec"], "round_trips" => round_trips}
    end

    def per_unit(units, cpu, redis, round_trips)
      {"commands_per_job" => redis["calls"].values.sum.fdiv(units),
       "round_trips_per_job" => round_trips.values.sum.fdiv(units),
       "process_cpu_us_per_job" => cpu * 1e6 / units, "redis_cpu_us_per_job" => redis["cpu"] * 1e6 / units}
    end
  end
end
