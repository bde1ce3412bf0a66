# frozen_string_literal: true

module LimitFetchBench
  # The highest concurrency seen per limited queue in a run, against its
  # limit: jobs in flight (handed out by retrieve_work, not yet acknowledged),
  # which includes the jobs running; and in the keyed section's hot-key runs
  # with the gem's job limits (their twins' too), the hot tenant's jobs
  # running at once (from inside them) against its key's limit; in the
  # rate section's runs with the gem's rates, the most starts within any
  # window of the period as the gem counted them (Redis's clock), against
  # the rate's limit: the hot key's and the paced class's; in the fair
  # section's, the class's jobs running at once (from inside them) against
  # its slots. A run over its
  # limit fails the bench.
  module LimitCheck
    module_function

    def all(runs) = queues(runs) + hot_keys(runs) + rates(runs) + fair(runs)

    # The fair section's scenarios: the most of the class (of the fair
    # queue, in its queue form) running at once (from inside its jobs)
    # against its slots.
    def fair(runs)
      runs.select { _1["variant"] == "fair_share" }.flat_map do |run|
        FairScenarios::SCENARIOS.keys.filter_map do |scenario|
          tally = run.dig(scenario, "tally") or next
          what = "#{run["queue_config"] ? "fair queue" : "class"} (#{scenario})"
          {"section" => "fair", "variant" => run["variant"], "round" => run["round"], "queue" => what,
           "max_in_flight" => nil, "max_running" => tally["max_running"], "limit" => run["sizes"]["slots"],
           "ok" => tally["max_running"] <= run["sizes"]["slots"]}
        end
      end
    end

    def rates(runs)
      runs.select { _1["section"] == "rate" }.filter_map do |run|
        case Variant[run["variant"]].workload
        when :rate_hot
          rate(run, "key #{KeyedVariants::HOT_TENANT}", run["hot_most_in_window_counted"], run["rate"])
        when :rate_idle then rate(run, "class PacedJob", run["pace"]&.fetch("most_in_window"), RateVariants::PACED_RATE)
        end
      end
    end

    # nil where the gem counted no starts (the limiter's runs).
    def rate(run, what, most, (limit, period))
      return nil unless most

      {"section" => "rate", "variant" => run["variant"], "round" => run["round"],
       "queue" => "#{what}: starts within #{period} s", "max_in_flight" => nil, "max_running" => most,
       "limit" => limit, "ok" => most <= limit}
    end

    def hot_keys(runs)
      runs.select { _1["section"] == "keyed" && Twin.split(_1["variant"]).first == "hot_gem" }.map do |run|
        {"section" => "keyed", "variant" => run["variant"], "round" => run["round"],
         "queue" => "key #{KeyedVariants::HOT_TENANT}", "max_in_flight" => nil, "max_running" => run["hot_max_running"],
         "limit" => run["hot_limit"], "ok" => run["hot_max_running"] <= run["hot_limit"].to_i}
      end
    end

    def queues(runs)
      runs.select { _1["limit"] }.flat_map do |run|
        run["max_in_flight"].map do |queue, seen|
          {"section" => run["section"], "variant" => run["variant"], "round" => run["round"], "queue" => queue,
           "max_in_flight" => seen, "max_running" => run["max_running"][queue], "limit" => run["limit"],
           "ok" => seen <= run["limit"]}
        end
      end
    end
  end
end
