# frozen_string_literal: true

# A job limit's id (JobLimitId) is built and read back in one place; what
# it reads back is what built it, whatever the text of its parts.
RSpec.describe Sidekiq::LimitFetch::JobLimitId do
  parts = described_class::Parts

  it "reads a class id back as the class" do
    expect(described_class.parse(described_class.of_class("Billing::ExportJob")))
      .to eq(parts.new(kind: :class, scope: "Billing::ExportJob", key: nil))
  end

  it "reads a key id back as its scope and key, whatever the key's text" do
    keys = ['te"n\\ant', "a]b[c", "ünï ٥", "#42#", "x@y", "", "key:class:"]
    read = keys.map { described_class.parse(described_class.of_key("SyncJob", _1)) }

    expect(read).to eq(keys.map { parts.new(kind: :key, scope: "SyncJob", key: _1) })
  end

  it "keeps a key per queue's queue in its scope, as the keys of that queue share it" do
    id = described_class.of_key('sync@"team"', "7", "eu@west")

    expect(id).to eq('key:sync@"team"@eu@west#7')
    expect(described_class.parse(id)).to eq(parts.new(kind: :key, scope: 'sync@"team"@eu@west', key: "7"))
  end

  it "reads a fair queue's id back as the queue, whatever its name" do
    names = ["imports", "a:b", "eu@west", "x y"]

    expect(names.map { described_class.parse(described_class.of_queue(_1)) })
      .to eq(names.map { parts.new(kind: :queue, scope: _1, key: nil) })
    expect(names.map { described_class.queue(described_class.of_queue(_1)) }).to eq(names)
    expect(%w[class:A key:A#1 queue:].map { described_class.queue(_1) }).to eq([nil, nil, nil])
  end

  it "reads an id it did not build (a payload written by hand) as a class limit named by its text" do
    expect(%w[class:A key:no-hash anything queue:].map { described_class.parse(_1) })
      .to eq(%w[A key:no-hash anything queue:].map { parts.new(kind: :class, scope: _1, key: nil) })
  end

  it "answers kind, scope and key from the same reading" do
    id = described_class.of_key("SyncJob", "a#b")

    expect([described_class.kind(id), described_class.scope(id), described_class.key(id)])
      .to eq([:key, "SyncJob", "a#b"])
    expect([described_class.kind("class:A"), described_class.scope("class:A"), described_class.key("class:A")])
      .to eq([:class, nil, nil])
  end
end
