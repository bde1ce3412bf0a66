# frozen_string_literal: true

require "json"
require "open3"

# The way out, from a console (LimitFetch.release_all) and from a shell
# (`sidekiq-limits release --all`): refused while a capsule lives, forced
# past it without touching that capsule's jobs, and what it says it did. The
# core's tests (tests/release_all.rs) hold the moves themselves to each job
# once, in order; spec/integration/rollback_spec.rb the whole rollback.
RSpec.describe "releasing every held job" do
  let(:root) { File.expand_path("../../..", __dir__) }
  let(:acme) { "key:LimitFetchSpec::SyncJob#acme" }

  # The CLI's output, less the line on stderr that names the Redis it
  # reached after a command that succeeded (its own spec: cli_spec.rb).
  def limits(*args)
    env = {"REDIS_URL" => RedisServer.url, "BUNDLE_GEMFILE" => File.join(root, "Gemfile")}
    stdout, stderr, status = Open3.capture3(env, "bundle", "exec", File.join(root, "exe/sidekiq-limits"), *args,
      chdir: root)
    [stdout, stderr.sub(%r{\Asidekiq-limits: Redis redis://\S+\n}, ""), status.exitstatus]
  end

  def queued_jids(queue)
    redis.call("LRANGE", "queue:#{queue}", 0, -1).reverse.map { |job| JSON.parse(job)["jid"] }
  end

  it "refuses while a capsule lives, and forced, moves the parked jobs and leaves the capsule its own" do
    capsule = build_capsule(queues: [LimitFetchSpec::KeyedJobs::QUEUE])
    fetcher = fetcher_for(capsule)
    queue = LimitFetchSpec::KeyedJobs::QUEUE
    jids = Array.new(3) { LimitFetchSpec::SyncJob.perform_async("acme", 0) }
    plain = LimitFetchSpec::TrackedJob.set(queue: queue).perform_async(queue, 0)
    # acme's first; then its others park, and the next job is taken.
    expect([fetcher.retrieve_work, fetcher.retrieve_work].map { |work| JSON.parse(work.job)["jid"] })
      .to eq([jids.first, plain])
    expect(Sidekiq::LimitFetch::JobLimit.new(acme).parked).to eq(2)

    expect { Sidekiq::LimitFetch.release_all }.to raise_error(Sidekiq::LimitFetch::ReleaseAll::LiveCapsules) { |error|
      expect(error.message).to start_with("1 live capsule (registered and beating) in 1 process: ")
      expect(error.message).to match(/:#{Process.pid}:\S+ \(heartbeat expires in \d+ s\); stop them first/)
      expect(error.capsules.map { |capsule_entry, _| capsule_entry.uuid }).to eq([uuid_of(capsule)])
    }
    out, err, status = limits("release", "--all")
    expect([out, status]).to eq(["", 1])
    expect(err).to start_with("sidekiq-limits: release refused: 1 live capsule")
    expect(Sidekiq::LimitFetch::JobLimit.new(acme).parked).to eq(2)

    out, err, status = limits("release", "--all", "--force")
    expect([err, status]).to eq(["", 0])
    expect(out).to eq(<<~TEXT)
      released 2 jobs to the front of their queues:
        #{queue}: 2 parked
      forced: the jobs of 1 live capsule (#{Sidekiq::LimitFetch.capsules.first.label}) left to them; they go back as those processes stop
    TEXT
    expect(queued_jids(queue)).to eq(jids.drop(1))
    expect(in_progress(uuid_of(capsule), queue).size).to eq(2)
    expect(redis.call("SISMEMBER", Sidekiq::LimitFetch::Keys::PARKED, acme)).to eq(0)

    # Again, from a console: nothing left but the capsule's own.
    result = Sidekiq::LimitFetch.release_all(force: true)
    expect([result.queues, result.jobs, result.capsules, result.dead]).to eq([{}, 0, 0, []])
    expect(result.live.map { |capsule_entry, _| capsule_entry.uuid }).to eq([uuid_of(capsule)])
    expect(in_progress(uuid_of(capsule), queue).size).to eq(2)
  end

  it "says when there is nothing to release, in text and JSON" do
    out, err, status = limits("release", "--all")
    expect([out, err,
            status]).to eq(["nothing to release: no parked job, no job of a capsule that is not alive\n", "", 0])

    out, err, status = limits("release", "--all", "--json")
    expect([err, status]).to eq(["", 0])
    expect(JSON.parse(out)).to eq(
      "queues" => {}, "dead" => [], "capsules" => 0, "outage_left" => nil, "live" => [], "jobs" => 0
    )
  end

  it "needs --all, and takes --all and --force for release only" do
    expect(limits("release")).to eq(
      ["", "sidekiq-limits: release: --all is required (it puts back every job the gem holds)\n", 2]
    )
    expect(limits("list", "--force")).to eq(["", "sidekiq-limits: --force applies to release only\n", 2])
    expect(limits("list", "--all")).to eq(["", "sidekiq-limits: --all applies to release only\n", 2])
  end
end
