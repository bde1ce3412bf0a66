# frozen_string_literal: true

# The line a process logs at boot (BootLine), from a config and its queues
# in the test Redis; the line a real `sidekiq` process logs is in
# spec/integration/sidekiq_cli_spec.rb.
RSpec.describe Sidekiq::LimitFetch::BootLine do
  let(:key) { ->(tenant, *) { tenant } }

  it "says each class's limits as declared, the one stored in Redis instead, and a broken declaration" do
    config = build_config(queues: %w[a b], limits: {"a" => 2})
    config.capsule("slow") { _1.queues = %w[b c] }
    Sidekiq::LimitFetch.admin.set_limit("a", :limit, 2)
    Sidekiq::LimitFetch::JobLimit.for(LimitFetchSpec::ExportJob).limit = 6
    declared = [
      ["Plain", {concurrency: 2}],
      ["Grouped", {"key" => key, "concurrency" => 3, "class_concurrency" => 10, "group" => :tenants,
                   "per_queue" => true}],
      ["Computed", {concurrency: -> { 4 }}],
      ["KeyComputed", {key: key, concurrency: -> { 2 }, on_limit: :discard}],
      ["LimitFetchSpec::ExportJob", {concurrency: 2}],
      ["Rated", {rate: {limit: 100, period: 60}}],
      ["KeyRated", {key: key, concurrency: 2, rate: {limit: 5, period: 0.5}}],
      ["Broken", {concurrency: "two"}],
      ["NotAHash", "two"]
    ]
    line = described_class.new(config, declared: declared).to_s
    expect(line).to eq(
      "sidekiq-limit_fetch #{Sidekiq::LimitFetch::VERSION}: queues a (limit 2), b (no limit), c (no limit); " \
      "job limits: Broken (invalid: sidekiq-limit_fetch: Broken's limit_fetch concurrency must be an Integer " \
      "from 0 to #{Sidekiq::LimitFetch::Limits::MAX}, got \"two\"), Computed set at each push, " \
      "Grouped 10 in all, 3 per key of group tenants and queue, " \
      "KeyComputed set at each push per key (discarded at its limit), " \
      "KeyRated 2 per key, rate 5/0.5 s per key, LimitFetchSpec::ExportJob 6, " \
      "NotAHash (invalid: sidekiq-limit_fetch: NotAHash's limit_fetch limit_fetch must be a Hash, got String), " \
      "Plain 2, Rated rate 100/60 s"
    )
  end

  it "finds the loaded classes that declare limit_fetch, and says when there are none" do
    names = described_class.declared.map(&:first)
    expect(names).to include("LimitFetchSpec::ExportJob", "LimitFetchSpec::SyncJob", "LimitFetchSpec::WebhookJob")
    expect(names).not_to include("LimitFetchSpec::TrackedJob")
    expect(names).to eq(names.sort)

    line = described_class.new(build_config, declared: []).to_s
    expect(line).to end_with("queues default (no limit); job limits: none (no class loaded so far declares " \
                             "limit_fetch, none in :class_limits)")
  end
end
