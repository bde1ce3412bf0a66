# frozen_string_literal: true

module LimitFetchBench
  # How Summary works out a row of figures from a variant's runs: medians,
  # spreads (median, min-max over the runs) and ratios of medians to other
  # runs (Stats.versus). `base`: the runs of the row's reference; `twin`:
  # its twin's, if any.
  module SummaryFigures
    # The costs per job ("<cost>_per_job": #cost), those of CPU.
    COSTS = %w[round_trips commands process_cpu redis_cpu].freeze
    CPU = %w[process_cpu redis_cpu].freeze
    IDLE_COSTS = %w[commands_per_s process_cpu_percent redis_cpu_percent].freeze
    LATENCY = %w[p50 p95 p99].freeze
    FETCH_MEDIANS = %w[mean_us p99_us commands_per_call redis_us_per_call].freeze
    MEMORY = %w[VmRSS VmHWM RssAnon RssFile Pss].freeze

    # "process_cpu" => "process_cpu_us_per_job".
    def cost(name, per = "per_job") = "#{name}#{"_us" if name.end_with?("cpu")}_#{per}"
    def versus(runs, other, key) = runs && Stats.versus(runs, other, key)
    def spread(runs, key) = Stats.spread(Stats.of(runs, key))
    def medians(runs, keys) = keys.to_h { [_1, Stats.median(Stats.of(runs, _1))] }
    def most(runs, keys) = keys.to_h { [_1, Stats.of(runs, _1).max] }

    # "ratio" (of jobs/s) and "<cost>_ratio" to the other runs; `name` "rev_ratio" for the twin.
    def ratios(runs, other, costs, name = "ratio")
      {name => versus(runs, other, "jobs_per_s"), **costs.to_h { ["#{_1}_#{name}", versus(runs, other, cost(_1))] }}
    end

    # The throughput of a variant, its costs per job, the most of one
    # queue's jobs in flight and running, and its ratios (to the twin: of
    # throughput and of `twin_costs`).
    def throughput_row(variant, runs, base, twin, twin_costs = CPU)
      {"label" => variant.label, "jobs" => runs.first["jobs"], "runs" => runs.size, "limit" => variant.limit,
       "slow" => variant.slow?, "baseline" => variant.baseline, "jobs_per_s" => spread(runs, "jobs_per_s"),
       "utilisation" => spread(runs, "utilisation"), **ratios(runs, base, CPU)}
        .merge(twin ? ratios(runs, twin, twin_costs, "rev_ratio") : {}, throughput_costs(runs, base))
    end

    # Round trips per job (and Ruby's and the Rust core's apart) and the
    # Redis ceiling: the jobs per second one Redis core can serve at its
    # Redis CPU per job (10⁶ / µs).
    def throughput_costs(runs, base)
      ceiling = [runs, base].map { _1 && Stats.ratio(1e6, Stats.median(Stats.of(_1, cost("redis_cpu")))) }
      {"round_trips" => %w[ruby rust].to_h { |side| [side, Stats.median(runs.map { per_job(_1, side) })] },
       **medians(runs, COSTS.map { cost(_1) }), "redis_ceiling_jobs_per_s" => ceiling[0],
       "redis_ceiling_ratio" => Stats.ratio(*ceiling), **concurrency(runs)}
    end

    def per_job(run, side) = run["round_trips"][side].fdiv(run["jobs"])
    # The most jobs of one queue seen in flight, and running, in any run.
    def concurrency(runs) = %w[max_in_flight max_running].to_h { |key| [key, runs.map { _1[key].values.max || 0 }.max] }

    # Pickup latency over all the runs' jobs (and the spread of the runs'
    # medians), a freed slot taken by a waiting thread, the idle cost.
    def idle_row(variant, runs, basic, twin)
      latencies = runs.flat_map { _1["latencies_ms"] }
      {"label" => variant.label, "runs" => runs.size, "jobs" => latencies.size,
       "latency_ms" => Stats.percentiles(latencies, *LATENCY),
       "run_p50_ms" => Stats.spread(runs.map { Stats.median(_1["latencies_ms"]) }), "handoff_ms" => handoff(runs)}
        .merge(idle_costs(runs), p50_ratios(latencies, basic, twin))
    end

    def handoff(runs)
      values = runs.flat_map { _1["handoff_ms"] || [] }
      Stats.percentiles(values, *LATENCY) unless values.empty?
    end

    def p50_ratios(latencies, basic, twin)
      ratio = ->(other) { Stats.ratio(Stats.median(latencies), Stats.median(other.flat_map { _1["latencies_ms"] })) }
      {"p50_ratio" => basic && ratio.call(basic), **(twin ? {"p50_rev_ratio" => ratio.call(twin)} : {})}
    end

    # Each idle cost's spread.
    def idle_costs(runs) = IDLE_COSTS.to_h { |key| [key, Stats.spread(runs.map { _1["idle"][key] })] }

    # Time per retrieve_work call (the median of the runs' medians), its
    # ratio to BasicFetch's (and the twin's), and the medians of the rest.
    def fetch_row(label, runs, basic, twin)
      {"label" => label, "runs" => runs.size, "calls" => runs.sum { _1["calls"] }, "p50_us" => spread(runs, "p50_us"),
       "ratio" => versus(runs, basic, "p50_us"), **medians(runs, FETCH_MEDIANS),
       **(twin ? {"rev_ratio" => versus(runs, twin, "p50_us")} : {})}
    end

    # A hot key's workload: the time until every job was done, the other
    # tenants' first starts (percentiles over all runs' tenants, and the
    # spread of the runs' p99), and the figures `shape` names: of the first
    # run, the most and the medians over the runs (with the costs per
    # executed job).
    def hot_row(variant, runs, shape)
      {"label" => variant.label, "runs" => runs.size, **runs.first.slice(*shape[:first]),
       "seconds" => spread(runs, "seconds"), "cold_first_start_s" => first_starts(runs), "run_p99_s" => run_p99(runs)}
        .merge(most(runs, shape[:most]), medians(runs, shape[:medians] + COSTS.map { cost(_1, "per_executed_job") }))
    end

    def run_p99(runs) = Stats.spread(runs.map { Stats.percentile(_1["cold_first_start_s"], 99) })
    def first_starts(runs) = Stats.percentiles(runs.flat_map { _1["cold_first_start_s"] }, "p50", "p99")
    def first_start_ratio(runs, other, pct) = Stats.ratio(first_starts(runs)[pct], first_starts(other)[pct])

    # A hot key's ratios to the same jobs with no key: of throughputs (also
    # with no key under a queue limit of 2) and of CPU per executed job.
    def hot_versus(runs, none, queue2)
      {"vs_none" => versus(none, runs, "seconds"), "vs_queue2" => versus(queue2, runs, "seconds"),
       **CPU.to_h { ["#{_1}_vs_none", versus(runs, none, cost(_1, "per_executed_job"))] }}
    end

    # A hot key's ratios to its twin: of throughputs, the other tenants'
    # first starts and the costs per executed job.
    def hot_rev_ratios(runs, twin)
      {"rev_ratio" => versus(twin, runs, "seconds"),
       **%w[p50 p99].to_h { |pct| ["first_start_#{pct}_rev_ratio", first_start_ratio(runs, twin, pct)] },
       **COSTS.to_h { ["#{_1}_rev_ratio", versus(runs, twin, cost(_1, "per_executed_job"))] }}
    end

    # A row per memory variant (twins too) and count of jobs; nil without the section.
    def memory_rows
      groups = group("memory")
      rows = present(groups, MemoryVariants::KEYS).flat_map do |key|
        groups[key].first["checkpoints"].each_index.map { memory_row(key, groups[key], groups["memory_basic"], _1) }
      end
      rows unless rows.empty?
    end

    # A memory run's figures after `index`'s count of jobs, in MB, and its
    # RSS against BasicFetch's (medians): the difference and the ratio.
    def memory_row(key, runs, basic, index)
      {"label" => Variant[key].label, "jobs" => runs.first["checkpoints"][index]["jobs"], "runs" => runs.size,
       **MEMORY.to_h { [_1, Stats.spread(megabytes(runs, index, _1))] },
       "threads" => Stats.of(runs, ["checkpoints", index, "Threads"]).max, **versus_basic(runs, basic, index)}
    end

    def versus_basic(runs, basic, index)
      rss = [runs, basic].map { _1 && Stats.median(megabytes(_1, index, "VmRSS")) }
      {"vs_basic_mb" => rss[1] && (rss[0] - rss[1]), "ratio" => Stats.ratio(*rss)}
    end

    def megabytes(runs, index, name) = Stats.of(runs, ["checkpoints", index, name]).map { _1 / 1024.0 }

    # A back_off run (BackOffRun) with its variant's label, the wall time's
    # ratio to the ideal, and whether every job was done exactly once, with
    # no retry, no job in the retry or dead set and no failure (`clean`); a
    # skipped run (the adaptive variant without BackOff) keeps only why.
    def back_off_row(run)
      row = run.slice("variant", "round").merge("label" => Variant[run["variant"]].label)
      return row.merge("skipped" => run["skipped"]) if run["skipped"]

      row.merge(run.except("section", "build"), "vs_ideal" => run["seconds"]&.fdiv(run["ideal_seconds"]),
        "clean" => clean?(run))
    end

    def clean?(run) = run["done_once"] && %w[retried_jobs retry_set_max dead_set failed].all? { run[_1].zero? }

    # A fair_share run (FairRun) with the median Redis CPU per job of the
    # cost variants' runs (`groups`): fair / plain key, and their ratio.
    def fair_row(run, groups)
      cost = groups.values_at("fair_cost", "fair_cost_plain")
                   .map { Stats.median(Stats.of(_1 || [], %w[cost redis_cpu_us_per_job])) }
      run.merge("cost" => {"fair" => cost[0], "plain" => cost[1], "ratio" => Stats.ratio(*cost)})
    end

    # A rate that never binds: whether it counted every start and left
    # nothing parked, and its ratios to the same jobs with no limit.
    def rate_counted(runs, none)
      {"rate" => runs.first["rate"], "starts_counted_min" => Stats.of(runs, "starts_counted").min,
       "rate_parked_max" => Stats.of(runs, "rate_parked").max, "vs_none" => (rate_vs_none(runs, none) if none)}
    end

    # Of jobs/s and of the costs per job but round trips (COSTS' first).
    def rate_vs_none(runs, none)
      {"jobs_per_s" => versus(runs, none, "jobs_per_s"), **COSTS.drop(1).to_h { [_1, versus(runs, none, cost(_1))] }}
    end

    # The hot backlog's last start against the least its rate allows, and
    # the most of its starts within a window, from inside the jobs and,
    # where the gem counted them in every run, from Redis.
    def rate_backlog(runs)
      last = spread(runs, "hot_last_start_s")
      counted = runs.map { _1["hot_most_in_window_counted"] }
      {"hot_last_start_s" => last, "hot_vs_ideal" => last && Stats.ratio(last["median"], runs.first["hot_ideal_s"]),
       "hot_most_in_window_counted" => (counted.max if counted.all?),
       "hot_starts_counted_min" => Stats.of(runs, "hot_starts_counted").min}
    end
  end
end
