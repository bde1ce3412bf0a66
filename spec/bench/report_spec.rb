# frozen_string_literal: true

$LOAD_PATH.unshift(File.expand_path("../../bench/lib", __dir__))
require "limit_fetch_bench"

# bin/bench's report from the committed results/latest.json, a full run
# with a baseline (no bench is run): its runs summarised anew give the
# summary stored beside them, and the summary renders as the committed
# results/latest.md, byte for byte.
RSpec.describe LimitFetchBench::Markdown do
  let(:json) { JSON.parse(File.read(File.join(LimitFetchBench::RESULTS, "latest.json"))) }

  it "renders results/latest.json as results/latest.md" do
    expect(described_class.new(json).render).to eq(File.read(File.join(LimitFetchBench::RESULTS, "latest.md")))
  end

  it "summarises the runs of results/latest.json as stored beside them, rows in the same order" do
    meta = json["meta"]
    summary = LimitFetchBench::Summary.new(json["runs"], options: LimitFetchBench::Options.parse([]),
      setup: meta.slice("redis", "proxy", "baseline"), seconds: meta["seconds"]).to_h
    expect(JSON.parse(JSON.generate(summary)).except("meta")).to eq(json.except("meta"))
    markdown = described_class.new(summary.merge("meta" => json["meta"])).render
    expect(markdown).to eq(File.read(File.join(LimitFetchBench::RESULTS, "latest.md")))
  end
end
