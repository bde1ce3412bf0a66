# frozen_string_literal: true

module LimitFetchBench
  # The fair section's table (FairSummary's rows), as Columns' others; each
  # header gives the issue's target.
  module Columns
    FAIR = [
      ["declaration", lambda { |row|
        "`#{row["declarations"]["FairJob"]}`#{" (stand-in: fair: not accepted)" unless row["fair_accepted"]}"
      }],
      ["a: slots busy, A alone (≥ 9.5)", %w[arrivals alone], :num, "%.2f"],
      ["b: A / B / C over the window (5 s); while all had work (3–4 each)", -> { fair_shares(_1["arrivals"]) }],
      ["b: A back to ≥ 9.5, s (≤ 1)", lambda { |row|
        b = row["arrivals"] or next "–"
        b["regained_s"] ? num(b["regained_s"], "%.2f") : "not within #{num(b["regain_looked_s"], "%.1f")} s"
      }],
      ["c: gold / B / C over the window (10 s); while all had work (gold 6 ± 1)", -> { fair_shares(_1["weighted"]) }],
      ["d: first start max / p50, s (max ≤ 1)", lambda { |row|
        d = row["hot"] or next "–"
        "#{num(d["first_start_max"], "%.2f")} / #{num(d["first_start_p50"], "%.2f")} " \
          "(#{d["started"]} of #{d["tenants"]} started within #{row["sizes"]["first_start_wait"]} s)"
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

    # "3.40 / 3.31 / 3.29 (5.0 s); 3.41 / 3.30 / 3.29 (3.5 s)": each
    # tenant's slots over the window, then while all had work, each with
    # its length.
    def fair_shares(figures)
      return "–" unless figures

      [%w[shares window_s], %w[shares_while_all while_all_s]].map do |shares, seconds|
        "#{figures[shares].values.map { num(_1, "%.2f") }.join(" / ")} (#{num(figures[seconds], "%.1f")} s)"
      end.join("; ")
    end
  end
end
