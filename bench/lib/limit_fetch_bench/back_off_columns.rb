# frozen_string_literal: true

module LimitFetchBench
  # The back_off section's table (BackOffSummary's rows), as Columns' others:
  # a header and a lambda of the row, run on the Markdown view.
  module Columns
    BACK_OFF = [
      ["variant", -> { _1["skipped"] ? "#{_1["label"]} (skipped: #{_1["skipped"]})" : _1["label"] }],
      ["all done, s / ideal (×)", lambda { |row|
        next "–" if row["skipped"]
        next "not all done in #{row["timeout"] || "the timeout"} s (#{row["done_jobs"]} of #{row["jobs"]})" unless
          row["seconds"]

        "#{num(row["seconds"], "%.2f")} / #{num(row["ideal_seconds"], "%.2f")} (#{ratio(row["vs_ideal"])})"
      }],
      ["50 / 90 / 99% done, s", lambda { |row|
        next "–" if row["skipped"] || row["done_at"].nil?

        row["done_at"].values_at("50", "90", "99").map { num(_1, "%.1f") }.join(" / ")
      }],
      ["calls / 429s (share)", lambda { |row|
        row["skipped"] ? "–" : "#{row["calls"]} / #{row["too_many"]} (#{num(row["too_many_share"] * 100, "%.1f")}%)"
      }],
      ["tenant's most calls in flight", -> { _1["skipped"] ? "–" : num(_1["max_in_flight"], "%d") }],
      ["job runs", -> { _1["skipped"] ? "–" : _1["runs"] }],
      ["jobs retried (highest retry_count)",
       -> { _1["skipped"] ? "–" : "#{_1["retried_jobs"]} (#{num(_1["max_retry_count"], "%d")})" }],
      ["retry set, most / at the end", -> { _1["skipped"] ? "–" : "#{_1["retry_set_max"]} / #{_1["retry_set_end"]}" }],
      ["dead set", -> { _1["skipped"] ? "–" : _1["dead_set"] }],
      ["Sidekiq failures", -> { _1["skipped"] ? "–" : _1["failed"] }],
      ["every job done once", lambda { |row|
        next "–" if row["skipped"]

        "#{row["done_once"] ? "yes" : "**no**"} (#{row["done_jobs"]} of #{row["jobs"]} done, " \
          "#{row["done_more_than_once"]} more than once)"
      }],
      ["after each capacity change, 0–5 s / 5–10 s: 429 share, capacity used", lambda { |row|
        changes = row["after_changes"]
        next "–" if row["skipped"] || changes.nil? || changes.empty?

        changes.zip(row["settled_after_changes"] || []).map do |change, settled|
          "→#{change["capacity"]}: " + [change, settled].compact.map do |stretch|
            "#{num(stretch["too_many_share"] * 100, "%.1f")}%, " \
              "#{num(stretch["capacity_used"] && (stretch["capacity_used"] * 100), "%.0f")}%"
          end.join(" / ")
        end.join("; ")
      }]
    ].freeze
  end
end
