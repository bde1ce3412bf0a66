# frozen_string_literal: true

module LimitFetchBench
  # The highest concurrency seen per limited queue in a run, against its
  # limit: jobs in flight (handed out by retrieve_work, not yet acknowledged),
  # which includes the jobs running. A run over its limit fails the bench.
  module LimitCheck
    module_function

    def all(runs)
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
