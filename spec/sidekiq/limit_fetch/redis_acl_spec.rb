# frozen_string_literal: true

require "digest"
require "sidekiq/limit_fetch/cli"
require "sidekiq/limit_fetch/metrics"
require "sidekiq/limit_fetch/web"
require_relative "../../support/own_redis_server"
require_relative "../../support/sentinel_cluster"
require_relative "../../support/sidekiq_app"

# The gem, and a Sidekiq server with it, under a Redis ACL user allowed only
# the keys and commands README.md lists: the users are made from the
# README's lines themselves, and Redis must have denied them nothing, through
# every path (parking a backlog at the head of a queue, rates, discards,
# reaping, a Redis that lost its data, Sentinel, the console, the CLI, the
# Limits tab's counts, the metrics). A user denied a command is refused at
# boot, before any script could stop partway on it.
RSpec.describe Sidekiq::LimitFetch, "under a minimal Redis ACL" do
  let(:password) { "acl-user-pw" }

  # The rules of README's ACL line for +user+, with the spec's password.
  def readme_rules(user)
    line = File.read(File.expand_path("../../../README.md", __dir__))[/^user #{user} (.+)$/, 1]
    raise "README.md has no ACL line for user #{user}" unless line

    line.split.map { |rule| rule.start_with?(">") ? ">#{password}" : rule }
  end

  let(:server) { OwnRedisServer.new(password: "default-pw").start }

  # The spec's own connection (the default user), on database 1.
  def admin(&)
    server.with_client(db: 1, &)
  end

  def acl_user(user, *extra_rules)
    admin do |conn|
      conn.call("ACL", "SETUSER", user, "reset", *readme_rules(user), *extra_rules)
      conn.call("ACL", "LOG", "RESET")
    end
    server.url(db: 1, userinfo: "#{user}:#{password}")
  end

  # What Redis refused, as [[user, command or key], ...].
  def denied
    admin { |conn| conn.call("ACL", "LOG") }.map { |entry| entry.to_h.values_at("username", "object") }
  end

  def busy_on(queue)
    admin { |conn| conn.call("LRANGE", queue_key(queue, "busy"), 0, -1) }
  end

  # A capsule of a process killed while it ran +jobs+ of +queue+.
  def dead_capsule(uuid, queue, jobs)
    admin do |conn|
      conn.call("SADD", LimitFetchHelpers::CAPSULES_KEY, uuid)
      # It beat last, within an expiry: a process starting now may reap it.
      conn.call("SET", LimitFetchHelpers::KEYS::LAST_BEAT, uuid, "EX", 600)
      jobs.each do |job|
        conn.call("RPUSH", queue_key(queue, "busy"), uuid)
        conn.call("LPUSH", in_progress_key(uuid, queue), job)
      end
      conn.call("SADD", LimitFetchHelpers::KEYS.capsule_queues(uuid), queue)
    end
  end

  # A job recovered from dead processes as often as allowed: the next
  # recovery sends it to the dead set.
  def poison_pill(queue)
    job_payload(queue).tap do |job|
      admin do |conn|
        conn.call("HSET", LimitFetchHelpers::KEYS::RECOVERIES, Digest::SHA1.hexdigest(job),
          described_class.configuration[:max_recoveries])
      end
    end
  end

  def jid(job)
    JSON.parse(job)["jid"]
  end

  after do
    cleanup_limit_fetch # while the server still runs
    server.remove
  end

  it "lets the gem fetch, acknowledge, requeue, beat and reap with only its own keys and commands" do
    url = acl_user("limit_fetch")
    capsule = build_capsule(queues: %w[a b], limits: {a: 1}, process_limits: {b: 1}, redis_url: url)
    semaphore = described_class::Global::QueueSemaphore.new(capsule, "a")
    recovered = job_payload("a")
    poison = poison_pill("a")
    dead_capsule("killed", "a", [recovered, poison])
    waiting = [job_payload("a"), job_payload("a")]
    admin { |conn| conn.call("LPUSH", "queue:a", *waiting) }

    fetcher = fetcher_for(capsule) # writes the limits, registers, beats: reaps "killed"
    uuid = uuid_of(capsule)
    wait_until(timeout: 5, message: "the dead capsule to be reaped") { !busy_on("a").include?("killed") }
    admin do |conn|
      expect(conn.call("ZRANGE", "dead", 0, -1)).to eq([poison])
      expect(conn.call("GET", queue_key("a", "limit"))).to eq("1")
    end

    first = fetcher.retrieve_work
    expect(jid(first.job)).to eq(jid(recovered)) # pushed back to the front
    expect(fetcher.retrieve_work).to be_nil # limit 1
    expect(semaphore.busy).to eq(1)
    expect(semaphore.process_busy).to eq(1)
    first.acknowledge # rides on the next fetch
    second = fetcher.retrieve_work
    expect(jid(second.job)).to eq(jid(waiting.first))
    second.requeue
    third = fetcher.retrieve_work
    expect(third.job).to eq(second.job)
    fetcher.bulk_requeue([third])
    semaphore.limit = 2
    expect(semaphore.limit).to eq(2)
    units = Array.new(2) { fetcher.retrieve_work }
    expect(units.map { |unit| jid(unit.job) }).to eq(waiting.map { |job| jid(job) })
    units.first.acknowledge
    flush_acks(capsule)
    semaphore.limit = nil
    described_class.client(capsule).beat
    expect(busy_on("a")).to eq([uuid])

    described_class.shutdown(capsule) # deregisters: the held job goes back
    admin do |conn|
      expect(conn.call("LRANGE", "queue:a", 0, -1)).to eq([units.last.job])
      expect(conn.call("SMEMBERS", LimitFetchHelpers::CAPSULES_KEY)).to eq([])
    end
    expect(busy_on("a")).to eq([])
    # what being told of new jobs takes: RESP3, client-side tracking, EXISTS on a queue
    RedisClient.config(url: url, protocol: 3).new_client.then do |conn|
      expect(conn.call("CLIENT", "TRACKING", "ON", "OPTIN", "NOLOOP")).to eq("OK")
      expect(conn.call("CLIENT", "CACHING", "YES")).to eq("OK")
      expect(conn.call("EXISTS", "queue:a")).to eq(1)
    ensure
      conn.close
    end
    expect(denied).to eq([])
    expect(spec_log.string).not_to match(/NOPERM/i)
  end

  # A job of +klass+ carrying +limits+ (what the client middleware writes).
  def limited(queue, klass, *limits)
    JSON.generate(JSON.parse(job_payload(queue, klass: klass)).merge("limit_fetch" => limits))
  end

  def queued(queue)
    admin { |conn| conn.call("LRANGE", "queue:#{queue}", 0, -1) }
  end

  # Sidekiq's client (the console API, the Web UI, the CLI) on +url+
  # meanwhile, in this thread.
  def with_sidekiq_redis(url, &)
    pool = Sidekiq::RedisConnection.create(url: url, size: 1, logger: spec_logger)
    Sidekiq::Client.via(pool, &)
  ensure
    pool&.shutdown(&:close)
    Sidekiq.default_configuration.redis = {url: RedisServer.url} # the CLI's --url
  end

  it "parks a tenant's backlog, holds a rate, discards, and reads it all with only the gem's commands" do
    url = acl_user("limit_fetch")
    tenant = {"id" => "key:Sync#acme", "concurrency" => 1}
    backlog = Array.new(4) { limited("t", "Sync", tenant) }
    other = job_payload("t")
    rated = Array.new(2) { limited("t", "Rated", {"id" => "class:Rated", "rate" => [1, 0.5]}) }
    hooks = Array.new(2) { limited("t", "Hook", {"id" => "key:Hook#1", "concurrency" => 1, "discard" => true}) }
    # Fetched right to left: the backlog first, at the head of the queue.
    admin { |conn| conn.call("LPUSH", "queue:t", *backlog, other, *rated, *hooks) }
    capsule = build_capsule(queues: %w[t], redis_url: url)
    fetcher = fetcher_for(capsule)

    first = fetcher.retrieve_work
    expect(jid(first.job)).to eq(jid(backlog[0]))
    # The 3 behind it at the full key limit are parked at once (LTRIM).
    expect(jid(fetcher.retrieve_work.job)).to eq(jid(other))
    expect(admin { |conn| conn.call("LLEN", "#{LimitFetchHelpers::KEY_PREFIX}limit:key:Sync#acme:parked") }).to eq(3)
    expect(jid(fetcher.retrieve_work.job)).to eq(jid(rated[0]))
    expect(jid(fetcher.retrieve_work.job)).to eq(jid(hooks[0])) # the second Rated is parked behind its rate
    expect(fetcher.retrieve_work).to be_nil # the second Hook discarded
    expect(spec_log.string).to include(jid(hooks[1]))

    with_sidekiq_redis(url) do
      expect(described_class.queue("t").explain.to_s).to eq("empty")
      expect(described_class.job_limits.map(&:id)).to include("key:Sync#acme")
      expect(described_class::Metrics.exposition(described_class.stats)).to include("parked_jobs")
      expect(described_class::Web::ParkedCounts.read["t"]).to be >= 3
      out = StringIO.new
      expect(described_class::CLI.start(["--url", url, "list"], out: out, err: out)).to eq(0), out.string
    end

    first.acknowledge # rides on the next fetch: the backlog's next goes back to the front
    sleep 0.6 # the rate's period: the next fetch releases the rated job
    units = Array.new(2) { fetcher.retrieve_work }
    expect(units.map { jid(_1.job) }).to contain_exactly(jid(backlog[1]), jid(rated[1]))

    # Redis restarted without its data: the next beat loads the library and
    # books again the jobs this capsule runs.
    admin do |conn|
      conn.call("FLUSHDB")
      conn.call("FUNCTION", "FLUSH")
    end
    described_class.client(capsule).beat
    held = admin { |conn| conn.call("LRANGE", in_progress_key(uuid_of(capsule), "t"), 0, -1) }
    running = [other, rated[0], hooks[0], backlog[1], rated[1]] # fetched, not acknowledged
    expect(held.map { jid(_1) }).to match_array(running.map { jid(_1) })
    expect(denied).to eq([])
    expect(spec_log.string).not_to match(/NOPERM|ACL/i)
  end

  it "refuses to start a capsule whose user is denied a command, with a line naming it, and loses no job" do
    url = acl_user("limit_fetch", "-ltrim")
    tenant = {"id" => "key:Sync#acme", "concurrency" => 1}
    backlog = Array.new(4) { limited("t", "Sync", tenant) }
    admin { |conn| conn.call("LPUSH", "queue:t", *backlog) }
    capsule = build_capsule(queues: %w[t], redis_url: url)

    expect { fetcher_for(capsule) }.to raise_error(described_class::CommandError) { |error|
      expect(error.message).to include("`ltrim queue:t 0 -1`", "add +ltrim to its ACL rules")
      expect(error.message).not_to include(password, "\n")
    }
    expect(queued("t")).to eq(backlog.reverse) # each job once, where it was
    expect(admin { |conn| conn.call("KEYS", "#{LimitFetchHelpers::KEY_PREFIX}*") }).to eq([])
  end

  it "logs a command denied after boot once, at error level, with the rule to add" do
    url = acl_user("limit_fetch")
    admin { |conn| conn.call("LPUSH", "queue:t", job_payload("t")) }
    fetcher = fetcher_for(build_capsule(queues: %w[t], redis_url: url))
    admin { |conn| conn.call("ACL", "SETUSER", "limit_fetch", "-lmove") }

    2.times { expect { fetcher.retrieve_work }.to raise_error(described_class::CommandError, /add \+lmove/) }
    logged = spec_log.string.lines.grep(/Redis refused a command/)
    expect(logged.size).to eq(1)
    expect(logged.first).to match(/ERROR.*`lmove`.*add \+lmove to the user's rules/)
    expect(queued("t").size).to eq(1) # the job stays in its queue
  end

  it "fetches behind Redis Sentinel, which asks the master its ROLE" do
    cluster = SentinelCluster.new(password: "default-pw", acl_user: ["limit_fetch", password]).start
    cluster.servers.each do |data|
      data.call("ACL", "SETUSER", "limit_fetch", "reset", *readme_rules("limit_fetch"))
      data.call("ACL", "LOG", "RESET")
    end
    redis = {url: "redis://limit_fetch:#{password}@mymaster/1", role: :master, sentinels: cluster.sentinels}
    config = build_config(queues: %w[s], redis_url: nil).tap { _1.redis = redis }
    cluster.master.with_client(db: 1) { |conn| conn.call("LPUSH", "queue:s", job_payload("s")) }

    unit = fetcher_for(config.default_capsule).retrieve_work
    expect(unit&.queue_name).to eq("s")
    unit.acknowledge
    flush_acks(config.default_capsule)
    expect(cluster.master.call("ACL", "LOG")).to eq([])

    cluster.master.call("ACL", "SETUSER", "limit_fetch", "-role")
    denied_role = build_config(queues: %w[s], redis_url: nil).tap { _1.redis = redis }
    expect { fetcher_for(denied_role.default_capsule) }
      .to raise_error(described_class::CommandError, /denies `role`: add \+role/)
  ensure
    cleanup_limit_fetch
    cluster&.remove
  end

  it "runs a Sidekiq server through a tenant's backlog, a rated class and a class limit" do
    url = acl_user("sidekiq", "+incr", "+decr") # the jobs' own records, as below
    @redis = server.client(db: 1)
    keyed = LimitFetchSpec::KeyedJobs
    with_sidekiq_redis(url) do # pushed through the client middleware, as this user
      Array.new(6) { LimitFetchSpec::SyncJob.perform_async("acme", 0.05) }
      Array.new(4) { LimitFetchSpec::RatedJob.perform_async(0) }
      Array.new(4) { LimitFetchSpec::ExportJob.perform_async(0.05) }
    end
    labels = {keyed.key_label("acme") => 6, keyed.class_label(LimitFetchSpec::RatedJob) => 4,
              keyed.class_label(LimitFetchSpec::ExportJob) => 4}

    instance = start_embedded(build_config(queues: [keyed::QUEUE], concurrency: 5, redis_url: url))
    wait_until(timeout: 15, message: -> { "14 jobs done, #{labels.keys.sum { done_jids(_1).size }} are" }) do
      labels.all? { |label, count| done_jids(label).size == count }
    end
    stop_embedded(instance)

    expect(max_running(keyed.key_label("acme"))).to eq(1)
    expect(max_running(keyed.class_label(LimitFetchSpec::ExportJob))).to be <= 2
    expect(denied).to eq([])
    expect(spec_log.string).not_to match(/NOPERM/i)
  end

  # The same, as a `sidekiq` process that connects as the README's user.
  it "runs a `sidekiq` process as the README's user through a parked backlog, a rated class and a class limit" do
    url = acl_user("sidekiq", "+incr", "+decr") # the jobs' own records, as below
    @redis = server.client(db: 1)
    keyed = LimitFetchSpec::KeyedJobs
    with_sidekiq_redis(url) do
      Array.new(6) { LimitFetchSpec::SyncJob.perform_async("acme", 0.05) } # 5 parked at the head at once
      Array.new(4) { LimitFetchSpec::RatedJob.perform_async(0) }
      Array.new(4) { LimitFetchSpec::ExportJob.perform_async(0.05) }
    end
    labels = {keyed.key_label("acme") => 6, keyed.class_label(LimitFetchSpec::RatedJob) => 4,
              keyed.class_label(LimitFetchSpec::ExportJob) => 4}
    app = SidekiqApp.new
    process = app.spawn("acl", config: app.write_config("acl", queues: [keyed::QUEUE], concurrency: 5),
      redis_url: url)

    wait_until(timeout: 30, message: -> { "14 jobs done, #{labels.keys.sum { done_jids(_1).size }} are" }) do
      labels.all? { |label, count| done_jids(label).size == count }
    end
    process.signal("TERM")
    process.wait(20)
    expect(process.alive?).to be(false)

    expect(max_running(keyed.key_label("acme"))).to eq(1)
    expect(max_running(keyed.class_label(LimitFetchSpec::ExportJob))).to be <= 2
    expect(denied).to eq([])
    expect(process.log).not_to match(/NOPERM|denies/i)
  ensure
    app&.stop_all
    app&.remove
  end

  it "runs a Sidekiq server with the gem: jobs, limits, retries, the dead set, scheduled jobs, reaping, shutdown" do
    # The spec's jobs count themselves (LimitFetchSpec::Recorder) on the
    # Redis of the Sidekiq running them, with two commands of their own.
    url = acl_user("sidekiq", "+incr", "+decr")
    @redis = server.client(db: 1) # what the jobs recorded is read there
    config = build_config(queues: %w[a b], limits: {a: 1}, process_limits: {b: 1}, concurrency: 4, redis_url: url)
    config[:poll_interval_average] = 1 # the scheduled poller starts within 5 s
    config[:timeout] = 1
    recovered = job_payload("a", seconds: 0.1)
    poison = poison_pill("a")
    dead_capsule("killed", "a", [recovered, poison])
    jobs = Array.new(4) { job_payload("a", seconds: 0.1) } + Array.new(4) { job_payload("b", seconds: 0.1) }
    scheduled = job_payload("b")
    unknown = job_payload("a", klass: "NoSuchJobClass")
    admin do |conn|
      jobs.each { |job| conn.call("LPUSH", "queue:#{JSON.parse(job)["queue"]}", job) }
      conn.call("LPUSH", "queue:b", "{not json")
      conn.call("LPUSH", "queue:a", JSON.generate(JSON.parse(unknown).merge("retry" => true)))
      conn.call("ZADD", "schedule", Time.now.to_f - 1, scheduled)
    end
    expected = [recovered, scheduled, *jobs].map { |job| jid(job) }

    instance = start_embedded(config)
    wait_until(timeout: 20, message: -> { "#{expected.size} jobs done, #{done_jids.size} are" }) do
      done_jids.size >= expected.size
    end
    expect(done_jids.sort).to eq(expected.sort)
    expect(max_running("a")).to eq(1)
    expect(max_running_per_worker("b").values).to eq([1])

    gated = job_payload("a", seconds: 30, gate: "never")
    admin { |conn| conn.call("LPUSH", "queue:a", gated) }
    wait_until(message: "the gated job to start") { started("a").size == 6 }
    stop_embedded(instance) # the gated job outlives the timeout: pushed back

    admin do |conn|
      expect(conn.call("LRANGE", "queue:a", 0, -1)).to eq([gated])
      expect(conn.call("ZRANGE", "dead", 0, -1)).to contain_exactly(poison, "{not json")
      retried = conn.call("ZRANGE", "retry", 0, -1).map { |job| JSON.parse(job) }
      expect(retried.map { |job| job.values_at("jid", "error_class") }).to eq([[jid(unknown), "NameError"]])
      expect(conn.call("SMEMBERS", LimitFetchHelpers::CAPSULES_KEY)).to eq([])
    end
    expect(busy_on("a") + busy_on("b")).to eq([])
    expect(denied).to eq([])
    expect(spec_log.string).not_to match(/NOPERM/i)
  end
end
