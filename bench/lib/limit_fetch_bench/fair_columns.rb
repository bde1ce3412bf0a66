# frozen_string_literal: true

module LimitFetchBench
  # The fair section's table (FairSummary's rows), as Columns' others; each
  # header gives the issue's target.
  module Columns
    FAIR = [
      ["declaration", lambda { |row|
        "`#{row["declarations"]["FairJob"]}`#{" (stand-in: fair: not accepted)" unless row["fair_accepted"]}"
      }],
      ["a: slots busy, A alone (≥ 9.5)", -> { num(_1.dig("arrivals", "alone"), "%.2f") }],
      ["b: A / B / C over 5 s (3–4 each); while all had work", lambda { |row|
        b = row["arrivals"] or next "–"
        "#{b["shares"].values.map { num(_1, "%.2f") }.join(" / ")}; " \
          "#{b["shares_while_all"].values.map { num(_1, "%.2f") }.join(" / ")} (#{num(b["while_all_s"], "%.1f")} s)"
      }],
      ["b: A back to ≥ 9.5, s (≤ 1)", lambda { |row|
        b = row["arrivals"] or next "–"
        b["regained_s"] ? num(b["regained_s"], "%.2f") : "not within #{num(b["regain_looked_s"], "%.1f")} s"
      }],
      ["c: gold / B / C over 10 s (gold 6 ± 1)",
       -> { (c = _1["weighted"]) ? c["shares"].values.map { |v| num(v, "%.2f") }.join(" / ") : "–" }],
      ["d: first start max / p50, s (max ≤ 1)", lambda { |row|
        d = row["hot"] or next "–"
        "#{num(d["first_start_max"], "%.2f")} / #{num(d["first_start_p50"], "%.2f")} " \
          "(#{d["started"]} of #{d["tenants"]} started)"
      }],
      ["e: most running / slots; every job done once", lambda { |row|
        tallies = FairSummary::SCENARIOS.filter_map { row.dig(_1, "tally") }
        "#{tallies.map { _1["max_running"] }.max} / #{row["sizes"]["slots"]}; " \
          "#{tallies.all? { _1["done_once"] } ? "yes" : "**no**"} (#{tallies.sum { _1["jobs"] }} jobs)"
      }],
      ["Redis CPU µs/job: fair / plain key (× ≤ 1.5)", lambda { |row|
        "#{num(row["cost"]["fair"], "%.1f")} / #{num(row["cost"]["plain"], "%.1f")} (#{ratio(row["cost"]["ratio"])})"
      }]
    ].freeze
  end
end
