# frozen_string_literal: true

require "json"
require "open3"
require "securerandom"

# The data format, from a console (LimitFetch.data_format, data_format=)
# and from a shell (`sidekiq-limits format [1|auto]`), with a real capsule
# whose beats take the census, beside a capsule of an older release
# registered as today's releases register (no format said). The core's
# tests (tests/format.rs) hold the census to v5's capsules, dead ones and
# the fetch's read.
RSpec.describe "the data format" do
  let(:root) { File.expand_path("../../..", __dir__) }
  let(:keys) { Sidekiq::LimitFetch::Keys }

  # The CLI's output, less the line on stderr that names the Redis it
  # reached after a command that succeeded (its own spec: cli_spec.rb).
  def limits(*args)
    env = {"REDIS_URL" => RedisServer.url, "BUNDLE_GEMFILE" => File.join(root, "Gemfile")}
    stdout, stderr, status = Open3.capture3(env, "bundle", "exec", File.join(root, "exe/sidekiq-limits"), *args,
      chdir: root)
    [stdout, stderr.sub(%r{\Asidekiq-limits: Redis redis://\S+\n}, ""), status.exitstatus]
  end

  # A capsule of this version, set up (registered), whose beats may reap
  # and take the census at once: another capsule beat lately.
  def our_capsule
    redis.call("SET", keys::LAST_BEAT, "another-capsule", "EX", 600)
    capsule = build_capsule(queues: ["format-spec"])
    setup_capsule(capsule)
    capsule
  end

  # One beat of +capsule+ that takes the census.
  def census(capsule)
    redis.call("DEL", keys::CENSUS)
    Sidekiq::LimitFetch.client(capsule).beat
    expect(redis.call("GET", keys::CENSUS)).to eq(uuid_of(capsule))
  end

  # A capsule of an older release of the gem, as it registers: the sets, a
  # heartbeat, an entry in the beats; no format said. Its UUID.
  def older_release_capsule
    uuid = SecureRandom.uuid
    redis.call("SET", keys.heartbeat(uuid), "1", "EX", 60)
    redis.call("SADD", keys::CAPSULES, uuid)
    redis.call("SADD", keys::REGISTERED, uuid)
    redis.call("ZADD", keys::BEATS, ((Time.now.to_f + 60) * 1000).to_i, uuid)
    uuid
  end

  def stop(uuid)
    redis.call("DEL", keys.heartbeat(uuid))
    redis.call("SREM", keys::CAPSULES, uuid)
    redis.call("SREM", keys::REGISTERED, uuid)
    redis.call("ZREM", keys::BEATS, uuid)
  end

  it "is 1 while a capsule of an older release lives, 2 once every live capsule speaks it, from a console" do
    # The older one first: our capsule's first beat, as it is set up, may
    # take the census.
    old = older_release_capsule
    capsule = our_capsule
    census(capsule)
    read = Sidekiq::LimitFetch.data_format
    expect([read.format, read.since, read.pinned?]).to eq([1, nil, false])
    expect(read.capsules.to_h { |entry, highest| [entry.uuid, highest] }).to eq(uuid_of(capsule) => 2, old => 1)
    expect(read.to_s).to eq("format 1, decided by the census")

    expect(spec_log.string).not_to include("data format is now")

    stop(old)
    before = Time.now
    census(capsule)
    read = Sidekiq::LimitFetch.data_format
    expect([read.format, read.pinned?]).to eq([2, false])
    expect(spec_log.string.scan("the fleet's data format is now 2: every live capsule speaks it").size).to eq(1)
    expect(read.since).to be_within(5).of(before)
    expect(read.to_h).to include(format: 2, pinned: false)
    expect(read.to_h[:capsules].map { _1.values_at(:uuid, :format) }).to eq([[uuid_of(capsule), 2]])

    Sidekiq::LimitFetch.data_format = 1
    census(capsule)
    read = Sidekiq::LimitFetch.data_format
    expect([read.format, read.pinned?]).to eq([1, true])
    expect(redis.call("GET", keys::FORMAT)).to match(/\A1:\d+:pinned\z/)

    Sidekiq::LimitFetch.data_format = :auto
    expect(Sidekiq::LimitFetch.data_format.pinned?).to be(false)
    census(capsule)
    expect(Sidekiq::LimitFetch.data_format.format).to eq(2)
    expect(spec_log.string.scan("data format is now 2").size).to eq(2)
    old = older_release_capsule
    census(capsule)
    expect(spec_log.string).to include("the fleet's data format is now 1: a capsule that does not speak format 2 " \
                                       "is live (an older release, or v5)")
    stop(old)
    census(capsule)

    expect { Sidekiq::LimitFetch.data_format = 2 }.to raise_error(ArgumentError, /1 \(pins format 1\) or :auto/)
    expect(Sidekiq::LimitFetch.data_format.format).to eq(2)
  end

  it "is shown, pinned and let be from a shell" do
    # The older one first: our capsule's first beat, as it is set up, may
    # take the census.
    old = older_release_capsule
    capsule = our_capsule
    out, err, status = limits("format")
    expect([err, status]).to eq(["", 0])
    expect(out.lines.first(2)).to eq(["data format 1, decided by the census\n", "2 live capsules:\n"])
    label = Sidekiq::LimitFetch.capsules.find { _1.uuid == uuid_of(capsule) }.label
    expect(out.lines.drop(2)).to contain_exactly(
      "  #{label} default: speaks up to format 2\n", "  #{old}: speaks up to format 1 (an older release, or v5)\n"
    )

    stop(old)
    census(capsule)
    since = Sidekiq::LimitFetch.data_format.since.utc.iso8601(3)
    out, err, status = limits("format", "1")
    expect([err, status]).to eq(["", 0])
    expect(out).to eq("data format 1 since #{Sidekiq::LimitFetch.data_format.since.utc.iso8601(3)}, pinned (the " \
                      "census leaves it until `format auto`) (was format 2 since #{since}, decided by the census)\n")

    out, err, status = limits("format", "--json")
    expect([err, status]).to eq(["", 0])
    expect(JSON.parse(out)).to include("format" => 1, "pinned" => true)
    expect(JSON.parse(out)["capsules"].map { _1["format"] }).to eq([2])

    out, err, status = limits("format", "auto", "--json")
    expect([err, status]).to eq(["", 0])
    expect(JSON.parse(out)).to include("was" => include("pinned" => true), "now" => include("format" => 1,
      "pinned" => false), "converted" => 0)
    census(capsule)
    expect(Sidekiq::LimitFetch.data_format.format).to eq(2)
  end

  it "takes 1 or auto alone" do
    expect(limits("format", "2")).to eq(
      ["", "sidekiq-limits: format: \"2\" is not 1 (pin format 1) or auto (the census decides)\n", 2]
    )
    expect(limits("format", "1", "auto")).to eq(["", "sidekiq-limits: format: unexpected argument \"auto\"\n", 2])
    expect(redis.call("GET", keys::FORMAT)).to be_nil
  end
end
