# frozen_string_literal: true

require "fileutils"
require "json"
require "open3"
require "sidekiq/limit_fetch/cli"
require_relative "../../support/sentinel_cluster"
require "securerandom"
require "tmpdir"

# The sidekiq-limits executable, run as a user runs it (bundle exec), against
# the test Redis: its output, its exit status and what it left in Redis.
RSpec.describe "exe/sidekiq-limits" do
  let(:root) { File.expand_path("../../..", __dir__) }

  # stdout, stderr and the exit status; the line a command that reached
  # Redis starts stderr with (the Redis it reached) is taken out into
  # @reached. +url+: REDIS_URL, or nil for none.
  def limits(*args, url: RedisServer.url, chdir: root)
    env = {"REDIS_URL" => url, "BUNDLE_GEMFILE" => File.join(root, "Gemfile")}
    stdout, stderr, status = Open3.capture3(env, "bundle", "exec", File.join(root, "exe/sidekiq-limits"), *args,
      chdir: chdir)
    @reached = stderr[/\Asidekiq-limits: Redis .*\n/]
    [stdout, stderr.delete_prefix(@reached.to_s), status.exitstatus]
  end

  def stored(queue, kind)
    redis.call("GET", queue_key(queue, kind))
  end

  it "lists queues as a table and as JSON" do
    push_jobs("webhooks", 3)
    push_jobs("mailers", 1)
    redis.call("SET", queue_key("webhooks", "limit"), "2")
    redis.call("SET", queue_key("mailers", "process_limit"), "1")
    redis.call("SET", queue_key("mailers", "rate"), "100/60")

    out, err, status = limits("list")
    expect([err, status]).to eq(["", 0])
    table = [
      %w[QUEUE LIMIT PROCESS_LIMIT RATE RUNNING QUEUED PAUSED STATE],
      %w[mailers - 1 100/60 (0 now) 0 1 no no live process serves it],
      %w[webhooks 2 - - 0 3 no no live process serves it]
    ]
    expect(out.lines.map(&:split)).to eq(table)

    out, err, status = limits("list", "--json")
    expect([err, status]).to eq(["", 0])
    rows = JSON.parse(out)
    expect(rows.map { |row| row.values_at("name", "limit", "process_limit", "busy", "queued", "paused") })
      .to eq([["mailers", nil, 1, 0, 1, false], ["webhooks", 2, nil, 0, 3, false]])
    expect(rows.last["explain"]).to include("reason" => "no_process")
  end

  it "sets and unsets limits and process limits" do
    out, err, status = limits("set", "webhooks", "5")
    expect([out, err, status]).to eq(["webhooks: limit 5 (was nil)\n", "", 0])
    expect(stored("webhooks", "limit")).to eq("5")

    out, _, status = limits("set", "webhooks", "0", "--process", "--json")
    expect(status).to eq(0)
    expect(JSON.parse(out)).to include("name" => "webhooks", "limit" => 5, "process_limit" => 0)
    expect(stored("webhooks", "process_limit")).to eq("0")

    out, _, status = limits("unset", "webhooks")
    expect([out, status]).to eq(["webhooks: limit removed (was 5)\n", 0])
    expect([stored("webhooks", "limit"), stored("webhooks", "process_limit")]).to eq([nil, "0"])
  end

  it "sets and unsets a queue's rate, and a job limit's limit and rate" do
    out, err, status = limits("set", "partner_api", "100/60", "--rate")
    expect([out, err, status]).to eq(["partner_api: rate 100/60 s (was nil)\n", "", 0])
    expect(stored("partner_api", "rate")).to eq("100/60")
    out, _, status = limits("set", "partner_api", "5/0.5", "--rate", "--json")
    expect(status).to eq(0)
    expect(JSON.parse(out)).to include("name" => "partner_api", "rate" => {"limit" => 5, "period" => 0.5})
    expect(limits("unset", "partner_api", "--rate")).to eq(["partner_api: rate removed (was 5/0.5 s)\n", "", 0])
    expect(stored("partner_api", "rate")).to be_nil

    id = "key:ApiJob#42"
    expect(limits("set", id, "10/1", "--job", "--rate")).to eq(["#{id}: rate 10/1 s (was nil)\n", "", 0])
    expect(redis.call("GET", Sidekiq::LimitFetch::Keys.job_rate(id))).to eq("10/1")
    expect(limits("set", id, "3", "--job")).to eq(["#{id}: limit 3 (was nil)\n", "", 0])
    expect(redis.call("GET", Sidekiq::LimitFetch::Keys.job_limit(id))).to eq("3")
    expect(limits("unset", id, "--job", "--rate")).to eq(["#{id}: stored rate removed (was 10/1 s)\n", "", 0])
    expect(limits("unset", id, "--job")).to eq(["#{id}: stored limit removed (was 3)\n", "", 0])
    expect(redis.call("KEYS", "#{LimitFetchHelpers::KEY_PREFIX}limit:*")).to eq([])
  end

  it "pauses for a duration, explains, and unpauses" do
    push_jobs("webhooks", 1)
    out, err, status = limits("pause", "webhooks", "--for", "5m")
    expect([err, status]).to eq(["", 0])
    expect(out).to match(/\Awebhooks: paused until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n\z/)
    expect(Sidekiq::LimitFetch.queue("webhooks").paused_until - Time.now).to be_within(5).of(300)

    out, _, status = limits("explain", "webhooks")
    expect([out, status]).to match([/\Awebhooks: paused until \d\d:\d\d:\d\dZ\n\z/, 0])
    out, _, status = limits("explain", "webhooks", "--json")
    expect(status).to eq(0)
    expect(JSON.parse(out)).to include("queue" => "webhooks", "reason" => "paused", "queued" => 1)

    expect(limits("unpause", "webhooks")).to eq(["webhooks: unpaused\n", "", 0])
    expect(Sidekiq::LimitFetch.queue("webhooks").paused?).to be(false)
    expect(limits("unpause", "webhooks")).to eq(["webhooks: was not paused\n", "", 0])

    expect(limits("pause", "webhooks")).to eq(["webhooks: paused until unpaused\n", "", 0])
    expect(redis.call("TTL", queue_key("webhooks", "paused"))).to eq(-1)
  end

  it "backs a job limit off, explains it, and resumes it; an adaptive one's range from the app (-r)" do
    app = Dir.mktmpdir("sidekiq-limits-jobs")
    File.write(File.join(app, "jobs.rb"), <<~RUBY)
      require "sidekiq"
      class CliAdaptiveJob
        include Sidekiq::Job
        sidekiq_options limit_fetch: {concurrency: 1..20}
      end
    RUBY
    id = "class:CliAdaptiveJob"
    out, err, status = limits("back-off", id, "30")
    expect([out, err, status]).to match([/\A#{id}: backing off, (29\.\d|30\.0) s left \(from the console\)\n\z/, "", 0])
    expect(Sidekiq::LimitFetch::JobLimit.new(id).back_off_state).to have_attributes(by: "console", jid: "")

    out, _, status = limits("explain", id, "--job", "--json")
    expect(status).to eq(0)
    expect(JSON.parse(out)).to include("id" => id, "back_off" => include("by" => "console", "left" => be > 20),
      "explain" => start_with("backing off"))

    expect(limits("resume", id)).to eq(["#{id}: resumed, 0 parked jobs back to their queues\n", "", 0])
    expect(Sidekiq::LimitFetch::JobLimit.new(id).back_off_state).to be_nil
    expect(limits("resume", id)).to eq(["#{id}: was not backing off\n", "", 0])

    expect(limits("-r", "./jobs.rb", "explain", id, "--job", chdir: app))
      .to eq(["#{id}: adaptive 1 of 1..20: 0 of 1 running\n", "", 0])
    out, _, status = limits("-r", "./jobs.rb", "explain", id, "--job", "--json", chdir: app)
    expect([JSON.parse(out)["adaptive"], status]).to eq([{"value" => 1, "floor" => 1, "ceiling" => 20}, 0])
  ensure
    FileUtils.rm_rf(app)
  end

  it "lists job limits with running or parked jobs: an adaptive one's limit in force, a back-off in force" do
    expect(limits("list", "--job")).to eq(["no job limit with running or parked jobs\n", "", 0])
    2.times { LimitFetchSpec::AdaptiveCallJob.perform_async("acme", 4, 0) }
    fetcher = fetcher_for(build_capsule(queues: [LimitFetchSpec::BackOffJobs::QUEUE], concurrency: 5))
    expect(fetcher.retrieve_work).not_to be_nil
    expect(fetcher.retrieve_work).to be_nil # the other parked: the limit in force is its floor, 1
    id = "key:LimitFetchSpec::AdaptiveCallJob#acme"
    Sidekiq::LimitFetch::JobLimit.new(id).back_off(30)

    out, err, status = limits("list", "--job")
    expect([err, status]).to eq(["", 0])
    back_off = /\Abacking off, (2\d\.\d|30\.0) s left \(from the console\)\z/
    rows = out.lines.map { _1.split(/ {2,}/).map(&:strip) }
    expect(rows).to match([%w[JOB_LIMIT LIMIT RUNNING PARKED BACK_OFF], [id, "adaptive 1 of 1..6", "1", "1", back_off]])
    out, _, status = limits("list", "--job", "--json")
    expect([JSON.parse(out).map { _1.values_at("id", "adaptive", "running", "parked") }, status])
      .to eq([[[id, {"value" => 1, "floor" => 1, "ceiling" => 6}, 1, 1]], 0])
  end

  it "explains and lists a fair class's tenants with their shares, with the app (-r) or without" do
    3.times { LimitFetchSpec::FairJob.perform_async("acme", 0) }
    2.times { LimitFetchSpec::FairJob.perform_async("b", 0) }
    fetcher = fetcher_for(build_capsule(queues: [LimitFetchSpec::FairJob::QUEUE], concurrency: 5))
    4.times { expect(fetcher.retrieve_work).not_to be_nil }
    expect(fetcher.retrieve_work).to be_nil # b's second waits its turn: the class's 4 are taken
    klass = "class:LimitFetchSpec::FairJob"
    acme, b, zed = %w[acme b zed].map { "key:LimitFetchSpec::FairJob##{_1}" }
    jobs = File.expand_path("../../support/fair_jobs.rb", __dir__)
    share = lambda { |tenant, running|
      {"tenant" => tenant, "running" => running, "weight" => 1.0, "share" => 2.0, "of" => 4}
    }

    expect(limits("explain", acme, "--job"))
      .to eq(["#{acme}: tenant acme: 3 of its fair 2.0 of 4, 2 tenants with work\n", "", 0])
    out, _, status = limits("explain", b, "--job", "--json")
    expect([JSON.parse(out).slice("id", "running", "parked", "fair"), status])
      .to eq([{"id" => b, "running" => 1, "parked" => 1, "fair" => share.call("b", 1).merge("tenants" => 2)}, 0])
    expect(limits("explain", zed, "--job")).to eq(["#{zed}: 0 running, 0 parked (its class is not loaded: -r loads " \
                                                   "the app, to tell a fair share if it has one)\n", "", 0])
    expect(limits("-r", jobs, "explain", zed, "--job"))
      .to eq(["#{zed}: tenant zed: no jobs; 2 tenants with work share 4\n", "", 0])

    out, err, status = limits("list", "--job")
    expect([err, status]).to eq(["", 0])
    rows = [%w[JOB_LIMIT LIMIT RUNNING PARKED BACK_OFF], [klass, "4, fair among 2 tenants", "4", "0", "-"],
            [acme, "fair 2.0/4", "3", "0", "-"], [b, "fair 2.0/4", "1", "1", "-"]]
    expect(out.lines.map { _1.split(/ {2,}/).map(&:strip) }).to eq(rows)
    out, _, status = limits("list", "--job", "--json")
    expect([JSON.parse(out).to_h { [_1["id"], _1["fair"]] }, status]).to eq([{
      klass => {"tenants" => 2}, acme => share.call("acme", 3).merge("tenants" => 2),
      b => share.call("b", 1).merge("tenants" => 2)
    }, 0])
  end

  it "lists a fair queue with its fair limit, and its tenants' shares as the queue's, a keyless one by its class" do
    queue = LimitFetchSpec::ImportJob::QUEUE
    Sidekiq::LimitFetch.queue(queue).fair_limit = 3
    3.times { LimitFetchSpec::ImportJob.perform_async("acme", 0) }
    LimitFetchSpec::ImportJob.perform_async("b", 0)
    LimitFetchSpec::PlainImportJob.perform_async(0)
    fetcher = fetcher_for(build_capsule(queues: [queue], concurrency: 5))
    3.times { expect(fetcher.retrieve_work).not_to be_nil } # acme alone at first: all 3
    expect(fetcher.retrieve_work).to be_nil # b and the keyless job wait their turn
    acme, b = %w[acme b].map { "key:LimitFetchSpec::ImportJob##{_1}" }
    plain = "class:LimitFetchSpec::PlainImportJob"
    split = ->(out) { out.lines.map { _1.split(/ {2,}/).map(&:strip) } }

    out, err, status = limits("list")
    expect([err, status]).to eq(["", 0])
    expect(split.call(out)).to eq([%w[QUEUE LIMIT PROCESS_LIMIT RATE RUNNING QUEUED PAUSED STATE],
                                   ["imports", "fair 3", "-", "-", "3", "0", "no",
                                    "fair 3, 3 tenants with work: at its fair limit 3/3"]])

    out, err, status = limits("list", "--job")
    expect([err, status]).to eq(["", 0])
    expect(split.call(out)).to eq([%w[JOB_LIMIT LIMIT RUNNING PARKED BACK_OFF],
                                   [plain, "fair 1.0/3 in queue imports", "0", "1", "-"],
                                   [acme, "100, fair 1.0/3 in queue imports", "3", "0", "-"],
                                   [b, "100, fair 1.0/3 in queue imports", "0", "1", "-"],
                                   ["queue:imports", "3, fair among 3 tenants", "3", "0", "-"]])
    out, _, status = limits("list", "--job", "--json")
    fair = JSON.parse(out).to_h { [_1["id"], _1["fair"]&.values_at("tenant", "queue")] }
    expect([fair, status]).to eq([{plain => ["LimitFetchSpec::PlainImportJob", "imports"], acme => %w[acme imports],
                                   b => %w[b imports], "queue:imports" => [nil, nil]}, 0])

    expect(limits("explain", acme, "--job"))
      .to eq(["#{acme}: tenant acme in queue imports: 3 of its fair 1.0 of 3, 3 tenants with work\n", "", 0])
    expect(limits("explain", plain, "--job")).to eq(["#{plain}: tenant LimitFetchSpec::PlainImportJob in queue " \
                                                     "imports: 0 of its fair 1.0 of 3, 3 tenants with work\n", "", 0])
    expect(limits("explain", "queue:imports", "--job")).to eq(["queue:imports: at its limit 3/3\n", "", 0])
    expect(limits("set", "queue:imports", "4", "--job")).to eq(["queue:imports: limit 4 (was 3)\n", "", 0])
    expect(Sidekiq::LimitFetch.queue(queue).fair_limit).to eq(4)
    Sidekiq::LimitFetch.queue(queue).limit = 2 # a limit set at run time besides
    expect(split.call(limits("list").first).last.first(2)).to eq(["imports", "2, fair 4"])
  end

  it "refuses bad input with one line on stderr and status 2, changing nothing" do
    redis.call("SET", queue_key("webhooks", "limit"), "3")
    before = limit_fetch_keys.to_h { |key| [key, redis.call("GET", key)] }

    {
      %w[set webhooks -1] => /invalid limit -1: a limit is a non-negative integer/,
      %w[set webhooks abc] => /invalid limit for queue "webhooks": "abc"/,
      %w[set webhooks 2.5 --process] => /invalid process_limit for queue "webhooks": "2.5"/,
      %w[set webhooks] => /set: missing N \(usage: set QUEUE N\)/,
      %w[unset] => /unset: missing QUEUE/,
      %w[pause webhooks --for 5x] => /invalid duration "5x"/,
      %w[pause webhooks --for 0] => /invalid duration "0"/,
      %w[pause webhooks --for] => /missing argument: --for/,
      %w[pause webhooks --process] => /--process applies to set and unset only/,
      %w[set webhooks 5 --rate] => /invalid rate for queue "webhooks": "5"/,
      %w[set webhooks 0/1 --rate] => %r{invalid rate for queue "webhooks": "0/1"},
      %w[set webhooks 5/0.01 --rate] => %r{invalid rate for queue "webhooks": "5/0.01"},
      %w[set webhooks 5/1 --rate --process] => /--process and --rate: one or the other/,
      %w[set class:A 5 --job --process] => /--process applies to queues, not --job/,
      %w[explain webhooks --rate] => /--rate applies to set and unset only/,
      %w[list --verbose] => /invalid option: --verbose/,
      %w[frobnicate webhooks] => /unknown command "frobnicate"/,
      %w[explain webhooks extra] => /explain: unexpected argument "extra"/,
      %w[back-off ApiJob 30] => /invalid job limit id "ApiJob" \(expected class:ApiJob, key:ApiJob#42 or queue:/,
      %w[back-off class:ApiJob 0] => /invalid duration "0"/,
      %w[back-off class:ApiJob] => /back-off: missing DURATION/,
      %w[resume key:ApiJob] => /invalid job limit id "key:ApiJob"/,
      %w[explain webhooks --job] => /invalid job limit id "webhooks"/,
      %w[pause webhooks --job] => /--job applies to set, unset, explain and list only/,
      %w[list extra --job] => /list: unexpected argument "extra"/,
      [] => /no command given/
    }.each do |args, message|
      out, err, status = limits(*args)
      expect([out, status]).to eq(["", 2]), "#{args.inspect}: #{err}"
      expect(err).to match(/\Asidekiq-limits: .*#{message.source}.*\n\z/), "#{args.inspect}: #{err}"
    end
    expect(limit_fetch_keys.to_h { |key| [key, redis.call("GET", key)] }).to eq(before)
  end

  it "reports an unreachable Redis in one line without the password, with status 2" do
    port = TCPServer.open("127.0.0.1", 0) { |server| server.addr[1] } # free, nothing listens
    url = "redis://:s3cret-pw@127.0.0.1:#{port}/0"

    [%w[list], %w[set webhooks 3], ["list", "--url", url]].each do |args|
      out, err, status = limits(*args, url: url)
      expect([out, status]).to eq(["", 2])
      expect(err).to match(%r{\Asidekiq-limits: cannot reach Redis redis://127\.0\.0\.1:#{port}/0: .*refused.*\n\z})
      expect(err).not_to include("s3cret-pw")
    end

    # bad input is named before any connection; a bad URL is not repeated
    expect(limits("set", "webhooks", "abc", url: url)).to match(["", /invalid limit for queue "webhooks": "abc"/, 2])
    ["foo://:s3cret-pw@x", "redis://:s3cret-pw@127.0.0.1:port/0"].each do |bad_url|
      [limits("list", url: bad_url), limits("list", "--url", bad_url)].each do |out, err, status|
        expect([out, err, status]).to eq(["", "sidekiq-limits: invalid Redis URL (expected redis://[:password@]host" \
                                              "[:port][/db], rediss://... or unix:///path)\n", 2])
      end
    end
  end

  it "connects with --url before REDIS_URL" do
    redis.call("SELECT", 0)
    out, err, status = limits("set", "webhooks", "4", "--url", RedisServer.url_for_db(3), url: "redis://127.0.0.1:1/0")
    expect([out, err, status]).to eq(["webhooks: limit 4 (was nil)\n", "", 0])
    expect(@reached).to eq("sidekiq-limits: Redis #{RedisServer.url_for_db(3)}\n")
    RedisServer.with_client(db: 3) do |conn|
      expect(conn.call("GET", queue_key("webhooks", "limit"))).to eq("4")
      conn.call("FLUSHDB")
    end
    expect(stored("webhooks", "limit")).to be_nil
  end

  # A small app whose config/boot.rb gives Sidekiq's client a Redis of its
  # own: the specs' server, database 5, as a user that needs its password
  # (no REDIS_URL in the environment). Its configure_server block points
  # elsewhere: a client does not run it.
  describe "loading the app (-r, -C) for the Redis it configured" do
    let(:app) { Dir.mktmpdir("sidekiq-limits-app") }
    let(:user) { "limits-cli-#{SecureRandom.hex(4)}" }
    let(:password) { "s3cret-app-pw" }
    let(:server) { URI.parse(RedisServer.url) }
    let(:app_redis) { "sidekiq-limits: Redis redis://#{server.host}:#{server.port}/5\n" }

    def write(path, text)
      File.write(File.join(app, path), text)
    end

    def stored_in(db, queue)
      RedisServer.with_client(db: db) { |conn| conn.call("GET", queue_key(queue, "limit")) }
    end

    before do
      redis.call("ACL", "SETUSER", user, "on", ">#{password}", "~*", "&*", "+@all")
      Dir.mkdir(File.join(app, "config"))
      write("config/boot.rb", <<~RUBY)
        require "sidekiq"
        Sidekiq.configure_client do |config|
          config.redis = {host: #{server.host.inspect}, port: #{server.port}, db: 5,
                          username: #{user.inspect}, password: #{password.inspect}}
        end
        Sidekiq.configure_server { |config| config.redis = {url: "redis://127.0.0.1:1/0"} }
      RUBY
    end

    after do
      redis.call("ACL", "DELUSER", user)
      RedisServer.with_client(db: 5) { |conn| conn.call("FLUSHDB") }
      FileUtils.rm_rf(app)
    end

    it "reaches the Redis the app's configure_client set, with -r FILE or -r a Rails app's directory" do
      RedisServer.with_client(db: 5) { |conn| conn.call("SET", queue_key("webhooks", "limit"), "7") }

      out, err, status = limits("-r", "./config/boot.rb", "list", url: nil, chdir: app)
      expect([err, status, @reached]).to eq(["", 0, app_redis])
      expect(out.lines.map(&:split).map { |row| row.first(2) }).to eq([%w[QUEUE LIMIT], %w[webhooks 7]])

      write("config/environment.rb", "require_relative \"boot\"\n")
      out, err, status = limits("-r", ".", "set", "webhooks", "4", url: nil, chdir: app)
      expect([out, err, status, @reached]).to eq(["webhooks: limit 4 (was 7)\n", "", 0, app_redis])
      expect([stored_in(5, "webhooks"), stored_in(0, "webhooks")]).to eq(["4", nil])
      expect(out + err + @reached).not_to include(password)
    end

    it "reads -C as sidekiq does: ERB, then YAML, its environment's section, its :require and its queues" do
      write("config/sidekiq.yml", <<~YAML)
        :require: ./config/boot.rb
        :queues:
          - [critical, 2]
          - <%= "reports" %>,1
        :capsules:
          :single:
            :queues: [serial]
        staging:
          :queues: [staged]
      YAML

      out, err, status = limits("-C", "config/sidekiq.yml", "list", "--json", url: nil, chdir: app)
      expect([err, status, @reached]).to eq(["", 0, app_redis])
      expect(JSON.parse(out).map { |row| row["name"] }).to eq(%w[critical reports serial])

      out, = limits("-C", "config/sidekiq.yml", "-e", "staging", "list", "--json", url: nil, chdir: app)
      expect(JSON.parse(out).map { |row| row["name"] }).to eq(%w[serial staged])
    end

    it "lets --url win over the app's Redis" do
      out, err, status = limits("-r", "./config/boot.rb", "set", "webhooks", "3", "--url", RedisServer.url_for_db(3),
        url: nil, chdir: app)
      expect([out, err, status, @reached]).to eq(["webhooks: limit 3 (was nil)\n", "", 0,
                                                  "sidekiq-limits: Redis #{RedisServer.url_for_db(3)}\n"])
      expect([stored_in(3, "webhooks"), stored_in(5, "webhooks")]).to eq(["3", nil])
      RedisServer.with_client(db: 3) { |conn| conn.call("FLUSHDB") }
    end

    # In this process, but for the app that raises (a subprocess: a require
    # would stay loaded): nothing of these loads.
    it "names a missing or broken -r or -C in one line, status 2, without the password" do
      write("config/broken.rb", "raise ArgumentError, \"bad Redis URL redis://app:#{password}@nowhere:1/0\"\n")
      out, err, status = limits("-r", "./config/broken.rb", "list", url: nil, chdir: app)
      expect([out, status, @reached]).to eq(["", 2, nil])
      expect(err).to eq("sidekiq-limits: -r ./config/broken.rb: the app failed to load: ArgumentError: " \
                        "bad Redis URL redis://[FILTERED]@nowhere:1/0\n")

      write("config/bad.yml", ":queues: [critical\n")
      {
        %W[-r #{app}/config/missing.rb] => %r{-r #{app}/config/missing\.rb: no such file or directory},
        %W[-r #{app}] => %r{-r #{app}: a directory must be a Rails app \(no config/environment\.rb in it\)},
        %W[-C #{app}/config/missing.yml] => %r{-C #{app}/config/missing\.yml: no such file},
        %W[-C #{app}/config/bad.yml] => %r{-C #{app}/config/bad\.yml: not valid YAML}
      }.each do |args, message|
        out = StringIO.new
        err = StringIO.new
        status = Sidekiq::LimitFetch::CLI.start([*args, "list"], out: out, err: err)
        expect([out.string, status]).to eq(["", 2]), "#{args.inspect}: #{err.string}"
        expect(err.string).to match(/\Asidekiq-limits: #{message.source}.*\n\z/), "#{args.inspect}: #{err.string}"
      end
    end
  end

  it "reaches the master the sentinels name when the app configures Sentinel, and names it without the password" do
    cluster = SentinelCluster.new(password: "Sentinel-app-pw").start
    app = Dir.mktmpdir("sidekiq-limits-sentinel")
    File.write(File.join(app, "boot.rb"), <<~RUBY)
      require "sidekiq"
      Sidekiq.configure_client do |config|
        config.redis = {name: "mymaster", sentinels: #{cluster.sentinels.inspect}, password: "Sentinel-app-pw", db: 2}
      end
    RUBY

    out, err, status = limits("-r", "./boot.rb", "set", "webhooks", "6", url: nil, chdir: app)

    expect([out, err, status]).to eq(["webhooks: limit 6 (was nil)\n", "", 0])
    expect(@reached).to eq(%(sidekiq-limits: Redis Sentinel master "mymaster", db 2\n))
    expect(cluster.master.with_client(db: 2) { |conn| conn.call("GET", queue_key("webhooks", "limit")) }).to eq("6")
  ensure
    cluster&.remove
    FileUtils.rm_rf(app) if app
  end

  it "boots a real Rails app's directory with -r, as sidekiq -r does" do
    out, err, status = limits("-r", "spec/fixtures/rails_app", "list")
    expect([out, err, status]).to eq(["no queues\n", "", 0])
    expect(@reached).to eq("sidekiq-limits: Redis #{RedisServer.url}\n")
  end

  it "names a Sentinel master, a Unix socket or TLS without asking the sentinels, and without the password" do
    described = ->(config) { Sidekiq::LimitFetch::CLI::Connection.described_config(config) }
    # Port 1: a sentinel asked for its master would fail the example.
    sentinels = [{host: "127.0.0.1", port: 1}]
    sentinel = RedisClient.sentinel(name: "mymaster", sentinels: sentinels, password: "pw-1", db: 2)
    socket = RedisClient.config(path: "/run/redis.sock", db: 1)

    expect(described.call(sentinel)).to eq('Redis Sentinel master "mymaster", db 2')
    expect(described.call(socket)).to eq("Redis unix:///run/redis.sock, db 1")
    expect(described.call(RedisClient.config(url: "rediss://:pw-2@cache.internal:6380/3")))
      .to eq("Redis rediss://cache.internal:6380/3")
  end

  it "prints its help" do
    out, err, status = limits("--help")
    expect([err, status]).to eq(["", 0])
    expect(out).to include("Usage: sidekiq-limits COMMAND", "pause QUEUE [--for DURATION]", "--json")
  end
end
