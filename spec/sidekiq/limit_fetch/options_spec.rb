# frozen_string_literal: true

require "pp"

# What crosses into the core is built, and checked, once, in Ruby: the
# tuning options of Sidekiq::LimitFetch.configuration and the Redis
# settings. Every bad value stops the boot with an ArgumentError naming the
# option (and the value, unless it is a secret), before anything is written.
RSpec.describe Sidekiq::LimitFetch, "options" do
  # Setting a capsule up fails with an ArgumentError; returns it.
  def boot_error
    capsule = build_capsule(queues: %w[a], limits: {a: 1})
    error = nil
    expect { setup_capsule(capsule) }.to raise_error(ArgumentError) { |e| error = e }
    expect(limit_fetch_keys).to eq([])
    error
  end

  describe "Sidekiq::LimitFetch.configuration" do
    it "refuses an unknown option at boot, naming it, instead of ignoring it" do
      described_class.configuration[:heartbeat_perod] = 3

      expect(boot_error.message).to include("unknown option :heartbeat_perod", ":heartbeat_period")
    end

    it "refuses an option given by a String key, naming it" do
      described_class.configuration["fetch_timeout"] = 3

      expect(boot_error.message).to include('unknown option "fetch_timeout"')
    end

    it "refuses a removed option at boot, naming it" do
      described_class.configuration.delete(:max_recoveries)

      expect(boot_error.message).to include("missing option :max_recoveries")
    end

    it "lists exactly the members of CapsuleOptions and FetchOptions among its defaults, and the other settings" do
      # :discards_to_death_handlers is read where discards are delivered, and
      # :count_parked_as_waiting by Sidekiq's API in any process
      # (Waiting.counted?), :back_off_on by the server middleware
      # (BackOffOn): none by a capsule.
      members = described_class::CapsuleOptions.members + described_class::FetchOptions.members +
                %i[discards_to_death_handlers count_parked_as_waiting back_off_on]

      expect(described_class::DEFAULTS.keys).to match_array(members)
      expect(described_class::Configuration.capsule_options(described_class::DEFAULTS))
        .to eq(described_class::CapsuleOptions.new(heartbeat_period: 15.0, max_recoveries: 3, lookahead: 100,
          at_limit_warning_after: 60.0))
      expect(described_class::Configuration.fetch_options(described_class::DEFAULTS))
        .to eq(described_class::FetchOptions.new(fetch_timeout: 2.0, poll_range: 0.4..0.5))
    end

    {heartbeat_period: [0, -1, "3", nil, Float::NAN, Float::INFINITY], max_recoveries: [-1, 2.5, "3", nil],
     lookahead: [0, -1, 10_001, 2.5, "3", nil], at_limit_warning_after: [0, -1, "60", nil],
     discards_to_death_handlers: ["true", nil, 1]}
      .each do |option, values|
        values.each do |bad|
          it "rejects #{option} #{bad.inspect} with an ArgumentError naming it, at boot, writing nothing" do
            described_class.configuration[option] = bad

            expect(boot_error.message).to match(/#{option}.*#{Regexp.escape(bad.inspect)}/)
          end
        end
      end
  end

  describe Sidekiq::LimitFetch::CapsuleOptions do
    it "holds the period as Float seconds" do
      options = described_class.new(heartbeat_period: 3, max_recoveries: 0, lookahead: 1, at_limit_warning_after: 5)

      expect(options.to_h).to eq(heartbeat_period: 3.0, max_recoveries: 0, lookahead: 1, at_limit_warning_after: 5.0)
    end

    it "raises on a missing or unknown member" do
      expect { described_class.new(heartbeat_period: 3) }.to raise_error(ArgumentError, /max_recoveries/)
      members = {heartbeat_period: 3, max_recoveries: 1, lookahead: 1, at_limit_warning_after: 1}
      expect { described_class.new(**members, extra: 1) }.to raise_error(ArgumentError, /extra/)
    end
  end

  describe Sidekiq::LimitFetch::FetchOptions do
    it "draws each pause from the range" do
      options = described_class.new(fetch_timeout: 1, poll_range: 0.2..0.3)

      expect(options.fetch_timeout).to eq(1.0)
      expect(Array.new(20) { options.poll_pause }).to all(be_a(Float).and(be_between(0.2, 0.3)))
    end

    it "rejects a poll_range that ends at infinity" do
      expect { described_class.new(fetch_timeout: 1, poll_range: 0.2..Float::INFINITY) }
        .to raise_error(ArgumentError, /poll_range.*0\.2\.\.Infinity/)
    end
  end

  describe Sidekiq::LimitFetch::RedisSettings do
    let(:valid) do
      {host: "127.0.0.1", port: 6379, path: nil, db: 0, username: nil, password: "Pw-8e1f", tls: :off,
       ca_certs: nil, timeout: 1}
    end

    it "takes every field, as given, with the timeout as Float seconds" do
      settings = described_class.new(**valid)

      expect(settings.to_h).to eq(valid.merge(timeout: 1.0, sentinel: nil))
    end

    it "takes a socket path without host and port" do
      settings = described_class.new(**valid, host: nil, port: nil, path: "/tmp/redis.sock")

      expect([settings.host, settings.port, settings.path]).to eq([nil, nil, "/tmp/redis.sock"])
    end

    {
      host: [nil, 1], port: [nil, 0, 65_536, "6379"], path: [1], db: [-1, "0", nil], username: [1],
      tls: [true, :on, nil], timeout: [nil, 0, -1, "1"]
    }.each do |field, values|
      values.each do |bad|
        it "rejects #{field} #{bad.inspect} with an ArgumentError naming it" do
          expect { described_class.new(**valid, field => bad) }
            .to raise_error(ArgumentError, /#{field} must be .*, got #{Regexp.escape(bad.inspect)}/)
        end
      end
    end

    it "raises on a missing or unknown field" do
      expect { described_class.new(**valid.except(:timeout)) }.to raise_error(ArgumentError, /timeout/)
      expect { described_class.new(**valid, ssl: true) }.to raise_error(ArgumentError, /ssl/)
    end

    it "never shows the password: not in a refusal, not in inspect" do
      expect { described_class.new(**valid, password: :"Pw-8e1f") }.to raise_error(ArgumentError) { |error|
        expect(error.message).to include("password must be a String or nil, got a Symbol")
        expect(error.message).not_to include("Pw-8e1f")
      }
      settings = described_class.new(**valid, ca_certs: "-----BEGIN CERTIFICATE-----")
      [settings.inspect, settings.to_s, settings.pretty_inspect].each do |text|
        expect(text).to include("password=\"[REDACTED]\"", "host=\"127.0.0.1\"", "ca_certs=\"[27 bytes]\"")
        expect(text).not_to include("Pw-8e1f")
      end
    end

    it "is built from Sidekiq's resolved redis config, socket path and TLS mode included" do
      from = ->(**options) { Sidekiq::LimitFetch::RedisOptions.from_client_config(RedisClient.config(**options)) }

      expect(from.call(url: "redis://u:pw@example.test:6390/4", timeout: 2).to_h).to eq(
        host: "example.test", port: 6390, path: nil, db: 4, username: "u", password: "pw", tls: :off,
        ca_certs: nil, timeout: 2.0, sentinel: nil
      )
      expect(from.call(path: "/tmp/r.sock").to_h).to include(host: nil, port: nil, path: "/tmp/r.sock")
      expect(from.call(url: "rediss://example.test").tls).to eq(:verify)
      expect(from.call(url: "rediss://example.test", ssl_params: {verify_mode: OpenSSL::SSL::VERIFY_NONE}).tls)
        .to eq(:insecure)
      expect { from.call(url: "redis://example.test", timeout: nil) }.to raise_error(ArgumentError, /timeout/)
    end
  end

  describe Sidekiq::LimitFetch::Native do
    let(:settings) { Sidekiq::LimitFetch::RedisOptions.from_client_config(RedisClient.config(url: RedisServer.url)) }
    let(:options) do
      Sidekiq::LimitFetch::CapsuleOptions.new(heartbeat_period: 15, max_recoveries: 3, lookahead: 100,
        at_limit_warning_after: 60)
    end

    it "takes only the typed settings and options" do
      expect { described_class.new({"host" => "127.0.0.1", "port" => 6379}, options) }
        .to raise_error(TypeError, /expected a Sidekiq::LimitFetch::RedisSettings, got a Hash/)
      expect { described_class.new(settings, {heartbeat_period: 15.0, max_recoveries: 3}) }
        .to raise_error(TypeError, /expected a Sidekiq::LimitFetch::CapsuleOptions, got a Hash/)
      expect(described_class.new(settings, options).uuid).to match(/\A\h{8}-/)
    end

    it "takes default limits only as DefaultLimits" do
      native = described_class.new(settings, options)

      expect { native.set_default_limits([["a", :limit, 1]]) }
        .to raise_error(TypeError, /expected a Sidekiq::LimitFetch::DefaultLimit, got a Array/)
      expect { native.set_default_limits([Sidekiq::LimitFetch::DefaultLimit.new(name: "a", kind: :global, value: 1)]) }
        .to raise_error(ArgumentError, /unknown limit kind :global/)
    end

    it "names the limit kinds its administration takes" do
      admin = Sidekiq::LimitFetch::NativeAdmin.new(settings)

      expect { admin.limit("a", :global) }
        .to raise_error(ArgumentError, /unknown limit kind :global \(expected :limit or :process_limit or :job_limit\)/)
    end
  end
end
