# frozen_string_literal: true

# A job's limits travel in its payload, written by the client middleware
# first in the JSON, its queue second, so that the fetch script reads them
# there without decoding the rest. spec/fixtures/job_limit_payloads.json
# holds both sides to the same bytes: here, jobs pushed through Sidekiq's
# client (its middleware chain, with the gem's) land in Redis as exactly
# those bytes; tests/payloads.rs has the fetch's Lua read from them the
# limits and queue the fixture states.
module LimitFetchSpec
  # The job classes of the fixture's cases, defined from their declarations.
  module Payloads
    @declared = {}

    # The Sidekiq job class +name+, declaring +declares+ (a key: the job's
    # first argument); defined at its first use, the same for every case
    # that names it.
    def self.job_class(name, declares)
      short = name.delete_prefix("#{self.name}::")
      raise ArgumentError, "#{name} is declared two ways" unless @declared.fetch(short, declares) == declares
      return const_get(short, false) if @declared.key?(short)

      @declared[short] = declares
      const_set(short, Class.new { include Sidekiq::Job }).tap { _1.sidekiq_options(limit_fetch: options(declares)) }
    end

    def self.options(declares)
      declares.to_h do |option, value|
        case option
        when "key" then [:key, ->(first, *) { first }]
        when "on_limit" then [:on_limit, value.to_sym]
        else [option.to_sym, value]
        end
      end
    end
  end
end

RSpec.describe Sidekiq::LimitFetch::ClientMiddleware, "payloads" do
  fixture = JSON.parse(File.read(File.expand_path("../../fixtures/job_limit_payloads.json", __dir__)))
  enqueued_at = fixture.fetch("enqueued_at")
  # Sidekiq sets enqueued_at at the push, last: the fixture's value stands for it.
  pushed_at = /"enqueued_at":\d+\}\z/

  fixture.fetch("cases").each do |example|
    it "writes #{example["case"]} as the fixture's bytes" do
      push = example.fetch("push")
      job_class = LimitFetchSpec::Payloads.job_class(push.fetch("class"), example.fetch("declares"))

      Sidekiq::Client.push(push.merge("class" => job_class))

      written = redis.call("LRANGE", Sidekiq::LimitFetch::Keys.queue(push.fetch("queue")), 0, -1)
      expect(written.map { _1.sub(pushed_at, %("enqueued_at":#{enqueued_at}})) }).to eq([example.fetch("payload")])
    end
  end

  it "states in each case the limits and queue its payload holds" do
    stated = fixture.fetch("cases").map { _1.values_at("limits", "queue") }

    expect(fixture.fetch("cases").map { JSON.parse(_1.fetch("payload")).values_at("limit_fetch", "queue") })
      .to eq(stated)
  end
end
