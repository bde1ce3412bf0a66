# frozen_string_literal: true

module LimitFetchChaos
  # The rates' table of the report (RatesReport#to_h) in Markdown: each
  # rate's starts, its tightest window, the shortest span of one start more
  # than its limit against what the check allows (its period less
  # RATE_SLACK), and its parked jobs' waits.
  module RatesMarkdown
    HEADER = ["rate", "queues", "starts", "most in any period / limit",
              "shortest span of limit + 1 starts (checked: at least)",
              "counted by the gem (Redis's clock): starts, most in any period; lags from fetch to start within",
              "samples with jobs parked",
              "longest wait with jobs parked and none begun within a period (a stall: over)"].freeze

    module_function

    # `plan`: the report's plan (each rate's queues).
    def table(rates, plan)
      Markdown.table(HEADER, rates.map { |id, seen| row(id, seen, plan.dig(:rates, id, :queues)) })
    end

    def row(id, seen, queues)
      ["`#{id}`", queues.join(", "), seen[:starts],
       "#{seen[:most_in_period]} / #{seen[:limit]} per #{seen[:period_s]} s",
       "#{seen[:shortest_span_ms] || "-"} ms (#{seen[:checked_ms].round} ms)",
       recorded(seen[:recorded]),
       "#{seen[:parked_samples]} of #{seen[:samples]}", "#{seen[:longest_wait_s]} s (#{seen[:stall_after_s]} s)"]
    end

    def recorded(seen)
      lag = seen[:lag_ms] ? "#{seen[:lag_ms]} ms" : "- (a run paired with none within FETCH_LAG)"
      "#{seen[:starts]}, #{seen[:most_in_period]}; #{lag}"
    end
  end
end
