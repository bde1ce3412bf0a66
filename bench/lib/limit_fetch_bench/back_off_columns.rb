# frozen_string_literal: true

module LimitFetchBench
  # The back_off section's table (BackOffSummary's rows), as Columns' others;
  # a skipped run's cells, after why in the first, are "–".
  module Columns
    BACK_OFF = [["variant", -> { _1["skipped"] ? "#{_1["label"]} (skipped: #{_1["skipped"]})" : _1["label"] }], *[
      ["all done, s / ideal (×)", lambda { |row|
        next "not all done in #{row["timeout"] || "the timeout"} s (#{row["done_jobs"]} of #{row["jobs"]})" unless
          row["seconds"]

        "#{num(row["seconds"], "%.2f")} / #{num(row["ideal_seconds"], "%.2f")} (#{ratio(row["vs_ideal"])})"
      }],
      ["50 / 90 / 99% done, s",
       -> { _1["done_at"] ? _1["done_at"].values_at("50", "90", "99").map { |at| num(at, "%.1f") }.join(" / ") : "–" }],
      ["calls / 429s (share)", -> { "#{_1["calls"]} / #{_1["too_many"]} (#{percent(_1["too_many_share"], "%.1f")})" }],
      ["tenant's most calls in flight", "max_in_flight", :num, "%d"], ["job runs", "runs"],
      ["jobs retried (highest retry_count)", -> { "#{_1["retried_jobs"]} (#{num(_1["max_retry_count"], "%d")})" }],
      ["retry set, most / at the end", -> { "#{_1["retry_set_max"]} / #{_1["retry_set_end"]}" }],
      ["dead set", "dead_set"], ["Sidekiq failures", "failed"],
      ["every job done once", lambda { |row|
        "#{row["done_once"] ? "yes" : "**no**"} (#{row["done_jobs"]} of #{row["jobs"]} done, " \
          "#{row["done_more_than_once"]} more than once)"
      }],
      ["after each capacity change, 0–5 s / 5–10 s: 429 share, capacity used", -> { after_changes(_1) }]
    ].map { |head, *cell| [head, ->(row) { row["skipped"] ? "–" : cell(row, *cell) }] }].freeze
  end
end
