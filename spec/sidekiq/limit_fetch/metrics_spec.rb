# frozen_string_literal: true

require "open3"
require "sidekiq/limit_fetch/metrics"

# LimitFetch.stats and the Metrics Rack app, against real capsules that hold
# slots and park jobs; the exposition is checked by Prometheus's own parser
# (promtool) and by its values.
module LimitFetchSpec
  # An adaptive class limit: 2 of the class at once, growing up to 5.
  class AdaptiveClassJob
    include Sidekiq::Job

    sidekiq_options queue: BackOffJobs::QUEUE, limit_fetch: {concurrency: 2..5}

    def perform; end
  end
end

RSpec.describe Sidekiq::LimitFetch::Metrics do
  let(:odd_queue) { "odd\"q\\ueue" }
  let(:clock) { Sidekiq::LimitFetch::AtLimitClock.new }
  let(:app) { described_class.new(stats: -> { Sidekiq::LimitFetch::Stats.new(clock: clock).to_h }) }

  def scrape(method = "GET")
    status, headers, body = app.call("REQUEST_METHOD" => method, "PATH_INFO" => "/")
    [status, headers, body.join]
  end

  # {"name{labels}" => value} from the exposition's samples.
  def samples(text)
    text.lines.grep_v(/\A#/).to_h do |line|
      series, value = line.chomp.split(/ (?=\S+\z)/)
      [series, Float(value)]
    end
  end

  def promtool(text)
    out, err, status = Open3.capture3("promtool", "check", "metrics", stdin_data: text)
    [out + err, status.exitstatus]
  end

  # webhooks at its limit 2 with 1 waiting, 2 starts of its rate of 10 a
  # minute; odd_queue paused; ExportJob at
  # its class limit 1 with 2 parked; SyncJob's key "t1" at 1 with 1 parked
  # and key "t2" running 1.
  def hold_slots
    keyed = LimitFetchSpec::KeyedJobs::QUEUE
    capsule = build_capsule(queues: ["webhooks", keyed], limits: {"webhooks" => 2}, concurrency: 10)
    capsule.config[:class_limits] = {"LimitFetchSpec::ExportJob" => 1}
    push_jobs("webhooks", 3)
    Sidekiq::LimitFetch.queue("webhooks").rate = "10/60"
    push_jobs(odd_queue, 1)
    Sidekiq::LimitFetch.queue(odd_queue).pause
    3.times { LimitFetchSpec::ExportJob.perform_async(0) }
    2.times { LimitFetchSpec::SyncJob.perform_async("t1", 0) }
    LimitFetchSpec::SyncJob.perform_async("t2", 0)
    fetcher = fetcher_for(capsule)
    units = []
    while (unit = fetcher.retrieve_work)
      units << unit
    end
    units
  end

  it "gives every queue's and job limit's figures as a plain Hash" do
    units = hold_slots
    stats = Sidekiq::LimitFetch.stats

    expect(units.size).to eq(5) # 2 webhooks, 1 export, t1 and t2
    no_rate = {rate_limit: nil, rate_period: nil, rate_starts: nil}
    # latency: the oldest waiting job's age, parked ones included
    row = {limit: nil, process_limit: nil, running: 0, queued: 0, parked: 0, latency: a_value_between(0.0, 10.0),
           paused: false, at_limit: false, at_limit_seconds: 0.0, **no_rate}
    expected = [
      row.merge(queue: "keyed", running: 3, parked: 3),
      row.merge(queue: odd_queue, queued: 1, paused: true),
      row.merge(queue: "webhooks", limit: 2, running: 2, queued: 1, at_limit: true, rate_limit: 10, rate_period: 60,
        rate_starts: 2)
    ]
    expect(stats[:queues]).to match(expected)
    no_back_off = {back_off_seconds_left: 0.0, backing_off: 0, back_offs: 0}
    expect(stats[:job_limits]).to contain_exactly(
      {kind: :class, scope: "LimitFetchSpec::ExportJob", limit: 1, running: 1, parked: 2, **no_rate, **no_back_off},
      {kind: :key, scope: "LimitFetchSpec::SyncJob", limit: nil, running: 2, parked: 1, **no_rate, **no_back_off}
    )
  end

  it "serves the Prometheus text format that promtool accepts, with the figures" do
    hold_slots
    status, headers, body = scrape

    expect(status).to eq(200)
    expect(headers).to eq("content-type" => "text/plain; version=0.0.4; charset=utf-8")
    expect(promtool(body)).to eq(["", 0])
    expect(body).to include(
      "# HELP sidekiq_limit_fetch_max_concurrent_jobs Jobs of the queue that may run at once across all processes",
      "# TYPE sidekiq_limit_fetch_at_limit_seconds_total counter\n",
      "# TYPE sidekiq_limit_fetch_parked_jobs gauge\n"
    )
    escaped = 'queue="odd\"q\\\\ueue"'
    latency = a_value_between(0.0, 10.0)
    expect(samples(body)).to match(
      'sidekiq_limit_fetch_max_concurrent_jobs{queue="webhooks"}' => 2.0,
      'sidekiq_limit_fetch_current_concurrent_jobs{queue="keyed"}' => 3.0,
      "sidekiq_limit_fetch_current_concurrent_jobs{#{escaped}}" => 0.0,
      'sidekiq_limit_fetch_current_concurrent_jobs{queue="webhooks"}' => 2.0,
      'sidekiq_limit_fetch_queue_jobs{queue="keyed"}' => 0.0,
      "sidekiq_limit_fetch_queue_jobs{#{escaped}}" => 1.0,
      'sidekiq_limit_fetch_queue_jobs{queue="webhooks"}' => 1.0,
      'sidekiq_limit_fetch_queue_parked_jobs{queue="keyed"}' => 3.0,
      "sidekiq_limit_fetch_queue_parked_jobs{#{escaped}}" => 0.0,
      'sidekiq_limit_fetch_queue_parked_jobs{queue="webhooks"}' => 0.0,
      'sidekiq_limit_fetch_queue_latency_seconds{queue="keyed"}' => latency,
      "sidekiq_limit_fetch_queue_latency_seconds{#{escaped}}" => latency,
      'sidekiq_limit_fetch_queue_latency_seconds{queue="webhooks"}' => latency,
      'sidekiq_limit_fetch_paused{queue="keyed"}' => 0.0,
      "sidekiq_limit_fetch_paused{#{escaped}}" => 1.0,
      'sidekiq_limit_fetch_paused{queue="webhooks"}' => 0.0,
      'sidekiq_limit_fetch_at_limit_seconds_total{queue="keyed"}' => 0.0,
      "sidekiq_limit_fetch_at_limit_seconds_total{#{escaped}}" => 0.0,
      'sidekiq_limit_fetch_rate_limit{queue="webhooks"}' => 10.0,
      'sidekiq_limit_fetch_rate_period_seconds{queue="webhooks"}' => 60.0,
      'sidekiq_limit_fetch_rate_window_starts{queue="webhooks"}' => 2.0,
      'sidekiq_limit_fetch_at_limit_seconds_total{queue="webhooks"}' => 0.0,
      'sidekiq_limit_fetch_job_limit_max_concurrent_jobs{kind="class",scope="LimitFetchSpec::ExportJob"}' => 1.0,
      'sidekiq_limit_fetch_job_limit_current_concurrent_jobs{kind="class",scope="LimitFetchSpec::ExportJob"}' => 1.0,
      'sidekiq_limit_fetch_job_limit_current_concurrent_jobs{kind="key",scope="LimitFetchSpec::SyncJob"}' => 2.0,
      'sidekiq_limit_fetch_parked_jobs{kind="class",scope="LimitFetchSpec::ExportJob"}' => 2.0,
      'sidekiq_limit_fetch_parked_jobs{kind="key",scope="LimitFetchSpec::SyncJob"}' => 1.0,
      **%w[job_limit_back_off_seconds_left job_limit_backing_off job_limit_back_offs_total].flat_map do |name|
        %w[class="LimitFetchSpec::ExportJob" key="LimitFetchSpec::SyncJob"].map do |labels|
          kind, scope = labels.split("=")
          ["sidekiq_limit_fetch_#{name}{kind=\"#{kind}\",scope=#{scope}}", 0.0]
        end
      end.to_h
    )
  end

  it "shows a back-off in force and the back-offs counted, and an adaptive class limit's limit in force" do
    capsule = build_capsule(queues: [LimitFetchSpec::BackOffJobs::QUEUE], concurrency: 10)
    3.times { LimitFetchSpec::AdaptiveClassJob.perform_async }
    2.times { |i| LimitFetchSpec::AdaptiveCallJob.perform_async("t#{i}", 4, 0) }
    fetcher = fetcher_for(capsule)
    units = []
    while (unit = fetcher.retrieve_work)
      units << unit
    end
    expect(units.size).to eq(4) # the adaptive class at its floor 2, t0 and t1
    keyed = Sidekiq::LimitFetch::JobLimit.for(LimitFetchSpec::AdaptiveCallJob, key: "t0")
    keyed.back_off(30)
    keyed.back_off(5) # counted, the longer one kept
    Sidekiq::LimitFetch::JobLimit.for(LimitFetchSpec::AdaptiveCallJob, key: "t1").back_off(10)

    status, _, body = scrape
    expect([status, promtool(body)]).to eq([200, ["", 0]])
    adaptive = 'kind="class",scope="LimitFetchSpec::AdaptiveClassJob"'
    tenants = 'kind="key",scope="LimitFetchSpec::AdaptiveCallJob"'
    expect(samples(body)).to include(
      "sidekiq_limit_fetch_job_limit_max_concurrent_jobs{#{adaptive}}" => a_value_between(2.0, 3.0),
      "sidekiq_limit_fetch_job_limit_back_off_seconds_left{#{adaptive}}" => 0.0,
      "sidekiq_limit_fetch_job_limit_back_off_seconds_left{#{tenants}}" => a_value_between(28.0, 30.0),
      "sidekiq_limit_fetch_job_limit_backing_off{#{tenants}}" => 2.0,
      "sidekiq_limit_fetch_job_limit_back_offs_total{#{tenants}}" => 3.0
    )
    expect(samples(body).keys.grep(/max_concurrent_jobs\{kind="key"/)).to eq([]) # keys' limits differ

    keyed.resume
    expect(samples(scrape.last)["sidekiq_limit_fetch_job_limit_back_off_seconds_left{#{tenants}}"])
      .to be_between(8.0, 10.0)
  end

  it "gives a fair class's tenants with work, and each tenant's share by its weight and its running jobs" do
    4.times { LimitFetchSpec::WeightedFairJob.perform_async("gold-1", 0) }
    2.times { LimitFetchSpec::WeightedFairJob.perform_async("b", 0) }
    fetcher = fetcher_for(build_capsule(queues: [LimitFetchSpec::FairJob::QUEUE], concurrency: 10))
    5.times { expect(fetcher.retrieve_work).not_to be_nil }
    expect(fetcher.retrieve_work).to be_nil # b's second waits its turn: the class's 5 are taken
    name = "LimitFetchSpec::WeightedFairJob"

    stats = Sidekiq::LimitFetch.stats
    expect(stats[:fair_classes]).to eq([{class: name, limit: 5, tenants_with_work: 2}])
    expect(stats[:fair_tenants]).to contain_exactly(
      {class: name, scope: name, key: "gold-1", running: 4, share: 3.75},
      {class: name, scope: name, key: "b", running: 1, share: 1.25}
    )
    status, _, body = scrape
    expect([status, promtool(body)]).to eq([200, ["", 0]])
    tenant = ->(key) { %(class="#{name}",scope="#{name}",key="#{key}") }
    expect(samples(body)).to include(
      %(sidekiq_limit_fetch_fair_tenants_with_work{class="#{name}"}) => 2.0,
      "sidekiq_limit_fetch_job_limit_fair_share{#{tenant.call("gold-1")}}" => 3.75,
      "sidekiq_limit_fetch_job_limit_fair_share{#{tenant.call("b")}}" => 1.25,
      "sidekiq_limit_fetch_job_limit_fair_current_concurrent_jobs{#{tenant.call("gold-1")}}" => 4.0,
      "sidekiq_limit_fetch_job_limit_fair_current_concurrent_jobs{#{tenant.call("b")}}" => 1.0
    )
  end

  it "gives a fair queue's fair limit as its limit, and its tenants' series labelled by the queue" do
    queue = LimitFetchSpec::ImportJob::QUEUE
    Sidekiq::LimitFetch.queue(queue).fair_limit = 3
    2.times { LimitFetchSpec::ImportJob.perform_async("acme", 0) }
    LimitFetchSpec::PlainImportJob.perform_async(0)
    fetcher = fetcher_for(build_capsule(queues: [queue], concurrency: 5))
    3.times { expect(fetcher.retrieve_work).not_to be_nil }
    scope = "LimitFetchSpec::ImportJob"
    plain = "LimitFetchSpec::PlainImportJob"

    stats = Sidekiq::LimitFetch.stats
    expect(stats[:queues].map { _1.values_at(:queue, :limit, :running) }).to eq([[queue, 3, 3]])
    expect(stats[:job_limits].find { _1[:kind] == :queue }).to include(scope: queue, limit: 3, running: 3)
    expect(stats[:fair_classes]).to eq([{queue: queue, limit: 3, tenants_with_work: 2}])
    expect(stats[:fair_tenants]).to contain_exactly(
      {queue: queue, scope: scope, key: "acme", running: 2, share: 1.5},
      {queue: queue, scope: nil, key: plain, running: 1, share: 1.5}
    )
    status, _, body = scrape
    expect([status, promtool(body)]).to eq([200, ["", 0]])
    expect(samples(body)).to include(
      %(sidekiq_limit_fetch_max_concurrent_jobs{queue="#{queue}"}) => 3.0,
      %(sidekiq_limit_fetch_job_limit_max_concurrent_jobs{kind="queue",scope="#{queue}"}) => 3.0,
      %(sidekiq_limit_fetch_fair_tenants_with_work{queue="#{queue}"}) => 2.0,
      %(sidekiq_limit_fetch_job_limit_fair_share{queue="#{queue}",scope="#{scope}",key="acme"}) => 1.5,
      %(sidekiq_limit_fetch_job_limit_fair_share{queue="#{queue}",scope="",key="#{plain}"}) => 1.5,
      %(sidekiq_limit_fetch_job_limit_fair_current_concurrent_jobs{queue="#{queue}",scope="#{scope}",key="acme"}) => 2.0
    )
    expect(body).not_to include(%(class="queue:))
  end

  it "counts the seconds a queue spends at its limit with jobs waiting, between scrapes" do
    units = hold_slots
    scrape
    sleep 0.2
    at_limit = samples(scrape.last)['sidekiq_limit_fetch_at_limit_seconds_total{queue="webhooks"}']
    expect(at_limit).to be_between(0.2, 1.0)

    units.find { |unit| unit.queue_name == "webhooks" }.acknowledge # below its limit now
    sleep 0.1
    scrape
    sleep 0.1
    expect(samples(scrape.last)['sidekiq_limit_fetch_at_limit_seconds_total{queue="webhooks"}']).to eq(at_limit)
  end

  it "adds only the time between two looks that both found the queue at its limit" do
    expect([10.0, 12.5].map { |now| clock.observe("q", true, now).seconds }).to eq([0.0, 2.5])
    expect(clock.observe("q", false, 13.0).to_a).to eq([nil, 2.5, 13.0])
    expect([20.0, 21.0].map { |now| clock.observe("q", true, now).seconds }).to eq([2.5, 3.5])
    expect(clock.observe("q", true, 22.0).since).to eq(20.0)
    expect(clock.observe("other", true, 22.0).seconds).to eq(0.0)
  end

  it "serves an empty exposition that promtool accepts when there is nothing to show, and HEAD" do
    status, _, body = scrape
    expect([status, promtool(body)]).to eq([200, ["", 0]])
    expect(samples(body)).to eq({})
    expect(scrape("HEAD")).to eq([200, {"content-type" => described_class::CONTENT_TYPE}, ""])
  end

  it "refuses other methods, and answers 503 without the password when Redis is unreachable" do
    expect(scrape("POST").first(2)).to eq([405, {"content-type" => "text/plain", "allow" => "GET, HEAD"}])

    push_jobs("webhooks", 1)
    port = TCPServer.open("127.0.0.1", 0) { |server| server.addr[1] }
    unreachable = build_config(redis_url: "redis://:s3cret-pw@127.0.0.1:#{port}/0")
    app = described_class.new(stats: lambda {
      Sidekiq::LimitFetch::Stats.new(admin: Sidekiq::LimitFetch.admin(unreachable)).to_h
    })
    status, _, body = app.call("REQUEST_METHOD" => "GET")
    expect([status, body.join]).to match([503, /\Asidekiq-limit_fetch: Redis unavailable \(.+\)\n\z/])
    expect(body.join).not_to include("s3cret")
  end
end
