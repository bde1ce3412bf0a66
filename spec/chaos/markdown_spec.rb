# frozen_string_literal: true

require "json"
require_relative "../../chaos/lib/limit_fetch_chaos"

# bin/chaos's Markdown reports (report.md.erb, a run's or --fault's), from the
# committed results/latest.json (as the committed results/latest.md) and a
# made-up --fault report (no chaos is run): the facts, every table's rows,
# the repeats cut at SHOWN, and the verdict.
RSpec.describe LimitFetchChaos::Markdown do
  let(:report) do
    json = JSON.parse(File.read(File.join(LimitFetchChaos::ROOT, "results", "latest.json")), symbolize_names: true)
    json.tap { _1[:limited][:discards][:counted].transform_keys!(&:to_s) } # a class's name, as Discards counts it
  end

  def lines(markdown) = markdown.lines(chomp: true)

  it "renders results/latest.json as results/latest.md, byte for byte" do
    expect(described_class.render(report)).to eq(File.read(File.join(LimitFetchChaos::ROOT, "results", "latest.md")))
  end

  it "renders a run's facts, its limits' and rates' tables and its verdict" do
    markdown = described_class.render(report)
    expect(lines(markdown).first(2)).to eq(["# bin/chaos: passed", ""])
    expect(lines(markdown)).to include(
      "|  |  |", "| jobs enqueued / completed / discarded / lost | 25944 / 13364 / 12580 / 0 |",
      "| discarded (DiscardChaosJob) | 12580 jobs: 12580 counted in Redis, 12526 logged, 54 whose log line a kill " \
      "cut off |",
      "| queue | most at once / limit | most in one process / limit |", "| b | 2 / 2 | 1 / 1 |",
      "| `key:KeyedChaosJob#t1` | k | 1 / 1 | 1 |"
    )
    expect(lines(markdown).grep(/ per [\d.]+ s \| /).size).to eq(report[:rates].size)
    expect(markdown).to end_with("\n\nNo failures.\n")
  end

  it "lists SHOWN repeated jobs at most, then how many more, and each failure" do
    report[:jobs][:repeated_jobs] *= 2
    report.merge!(passed: false, failures: %w[one two])
    markdown = described_class.render(report)
    rows = lines(markdown).grep(/\A\| [0-9a-f]{24} \|/)
    expect(rows.size).to eq(described_class::SHOWN)
    expect(markdown).to include("\n\n#{(2 * 72) - 30} more in the JSON report (results/latest.json).\n\n" \
                                "- FAILED: one\n- FAILED: two\n")
  end

  it "renders a --fault report" do
    fault = {passed: true, failures: [], environment: report[:environment],
             fault: {spec: "redis-stop:12", redis: {at_s: 3.2, down_s: 12.5}, freeze: nil,
                     reaped: {capsules: 0, slots: 0, jobs: 0}},
             jobs: {pushed: 10, completed: 10, lost: 0, runs: 10, repeats: {frozen_reaped: 0}, repeated_jobs: []},
             limits: {"queue a": {max: 2, limit: 2}}, stalls: [], booked: {slots: []}, seconds: 50.1}
    expect(lines(described_class.render(fault))).to include(
      "# bin/chaos --fault redis-stop:12: passed", "| fault | Redis down 12.5 s from 3.2 s |",
      "| runs; repeats by category | 10; frozen_reaped 0 |", "| `queue a` | 2 / 2 |", "No failures."
    )
  end
end
