# frozen_string_literal: true

module LimitFetchBench
  # The highest concurrency seen per limited queue in a run, against its
  # limit: jobs in flight (handed out by retrieve_work, not yet acknowledged),
  # which includes the jobs running; and in the keyed section's hot-key runs
  # with the gem's job limits, the hot tenant's jobs running at once (from
  # inside them) against its key's limit. A run over its limit fails the
  # bench.
  module LimitCheck
    module_function

    def all(runs) = queues(runs) + hot_keys(runs)

    def hot_keys(runs)
      runs.select { _1["section"] == "keyed" && _1["variant"] == "hot_gem" }.map do |run|
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
