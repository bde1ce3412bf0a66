# frozen_string_literal: true

# Every reader of a stored rate agrees on the table of values in
# spec/fixtures/rate_values.json: Ruby's here; tests/rate_values.rs holds
# the core's and the fetch script's to the same table.
RSpec.describe Sidekiq::LimitFetch::Rates do
  values = JSON.parse(File.read(File.expand_path("../../fixtures/rate_values.json", __dir__))).fetch("values")

  it "reads every stored rate as the table says" do
    mismatches = values.filter_map do |raw, reads_as|
      rate = described_class.parse(raw)
      got = rate && [rate.limit, rate.period]
      "#{raw.inspect}: #{got.inspect}, expected #{reads_as.inspect}" unless got == reads_as
    end

    expect(mismatches).to eq([])
  end

  it "writes a rate as text that reads back as the same rate" do
    [[100, 60], [5, 0.5], [1, 0.1], [3, 1.25], [7, 604_800]].each do |limit, period|
      rate = described_class.coerce("a rate", {limit: limit, period: period})
      expect(described_class.parse(rate.to_s)).to eq(rate)
    end
    expect(described_class.coerce("a rate", {"limit" => 5, "period" => 0.5}).to_s).to eq("5/0.5")
  end

  it "refuses anything but a positive limit and a period from 0.1 s to a week, naming what and the value" do
    [{limit: 0, period: 1}, {limit: -1, period: 1}, {limit: 1.5, period: 1}, {limit: 5}, {period: 1},
     {limit: 5, period: 0}, {limit: 5, period: -1}, {limit: 5, period: 0.05}, {limit: 5, period: 604_801},
     {limit: 5, period: Float::INFINITY}, {limit: 5, period: Float::NAN}, {limit: 5, period: "60"},
     {limit: 5, period: 60, burst: 2}, "5/0.01", "0/1", "five", 5, nil].each do |bad|
      expect { described_class.coerce("queue \"q\"'s rate", bad) }
        .to raise_error(ArgumentError, /invalid queue "q"'s rate: #{Regexp.escape(bad.inspect)}/)
    end
  end
end
