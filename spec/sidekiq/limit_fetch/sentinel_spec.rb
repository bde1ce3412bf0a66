# frozen_string_literal: true

require "pp"
require_relative "../../support/sentinel_cluster"

# Sidekiq's Sentinel configuration (`sentinels:`, `role: :master`, the
# sentinels' own `sentinel_username`/`sentinel_password`), as the gem reads it
# and as the core follows it, on real sentinels. A failover with a running
# process: spec/integration/sentinel_failover_spec.rb.
RSpec.describe "Redis Sentinel" do
  let(:sentinel_options) do
    {url: "redis://Master-user:Master-pw@mymaster/2", role: :master,
     sentinels: [{host: "127.0.0.1", port: 26_393}, "redis://127.0.0.1:26394"],
     sentinel_username: "watcher", sentinel_password: "Sentinel-pw"}
  end

  def settings_for(**options)
    Sidekiq::LimitFetch::RedisOptions.from_client_config(RedisClient.sentinel(**options))
  end

  describe "the settings read from Sidekiq's" do
    it "keep the master's name, each sentinel with its own credentials, and no master address" do
      settings = settings_for(**sentinel_options)

      expect(settings.to_h).to include(host: nil, port: nil, db: 2, username: "Master-user", password: "Master-pw")
      expect(settings.sentinel.master_name).to eq("mymaster")
      sentinel = {host: "127.0.0.1", username: "watcher", password: "Sentinel-pw", tls: :off}
      expect(settings.sentinel.sentinels.map { _1.to_h.slice(:host, :port, :username, :password, :tls) })
        .to eq([sentinel.merge(port: 26_393), sentinel.merge(port: 26_394)])
      [settings.inspect, settings.sentinel.inspect, settings.pretty_inspect].each do |text|
        expect(text).to include("master_name=\"mymaster\"", "port=26394")
        expect(text).not_to include("Master-pw", "Sentinel-pw")
      end
    end

    it "refuses a replica role, which cannot take writes" do
      expect { settings_for(**sentinel_options, role: :replica) }
        .to raise_error(ArgumentError, /Sentinel role must be :master .*got :replica/)
    end

    it "refuses what no sentinel setting can be, naming it" do
      sentinel = settings_for(**sentinel_options).sentinel.sentinels.first
      build = ->(**fields) { Sidekiq::LimitFetch::SentinelSettings.new(master_name: "m", sentinels: [sentinel], **fields) }

      expect { build.call(master_name: "") }.to raise_error(ArgumentError, /master_name must be a non-empty String/)
      expect { build.call(sentinels: []) }.to raise_error(ArgumentError, /sentinels must be a non-empty Array/)
      expect { build.call(sentinels: [{host: "h", port: 1, password: "Secret-1"}]) }
        .to raise_error(ArgumentError) { |error| expect(error.message).not_to include("Secret-1") }
    end
  end

  describe "on real sentinels" do
    let(:cluster) do
      SentinelCluster.new(password: "Default-pw", acl_user: %w[sidekiq Master-pw],
        sentinel_user: %w[watcher Sentinel-pw])
    end
    let(:options) do
      {url: "redis://sidekiq:Master-pw@mymaster/0", role: :master, sentinels: cluster.sentinels,
       sentinel_username: "watcher", sentinel_password: "Sentinel-pw"}
    end

    before { cluster.start }

    after { cluster.remove }

    def capsule_with(redis)
      build_config(queues: ["s"], limits: {"s" => 1}, redis_url: nil).tap { _1.redis = redis }.default_capsule
    end

    it "fetches from the master the sentinels name, with their credentials and the master's own" do
      capsule = capsule_with(options)
      cluster.master.with_client { |conn| conn.call("LPUSH", "queue:s", job_payload("s")) }

      unit = fetcher_for(capsule).retrieve_work

      expect(unit&.queue_name).to eq("s")
      expect(cluster.master.call("LRANGE", queue_key("s", "busy"), 0, -1)).to eq([uuid_of(capsule)])
      unit.acknowledge
      flush_acks(capsule)
      expect(cluster.master.call("LLEN", queue_key("s", "busy"))).to eq(0)
    end

    it "fails at setup, naming the sentinels and what each said, without a password, writing nothing" do
      down = [{host: "127.0.0.1", port: LimitFetchTools.free_port},
              {host: "127.0.0.1", port: LimitFetchTools.free_port}]
      {
        options.merge(sentinels: down) => /:#{down[0][:port]}: [^;]*refused.*; 127\.0\.0\.1:#{down[1][:port]}: /,
        options.merge(url: "redis://sidekiq:Master-pw@nomaster/0") =>
          /no master named "nomaster" is known to 127\.0\.0\.1:#{cluster.sentinel_ports[0]}, /,
        options.merge(sentinel_password: "Wrong-pw") => /#{cluster.sentinel_ports[0]}: .*authentication failed/i
      }.each do |redis, message|
        expect { setup_capsule(capsule_with(redis)) }.to raise_error(Sidekiq::LimitFetch::ConnectionError) { |error|
          expect(error.message).to match(message).and(include("Redis Sentinel"))
          expect(error.message).not_to include("Master-pw", "Sentinel-pw", "Wrong-pw")
        }
      end
      expect(cluster.master.call("KEYS", "#{LimitFetchHelpers::KEY_PREFIX}*")).to eq([])
    end
  end
end
