# frozen_string_literal: true

require_relative "../../support/own_redis_server"

# A password, however it is given, never reaches a log line or an exception
# message: not while things work, not from the heartbeat while Redis is
# down, not from a fetch that cannot connect, not from a capsule that
# cannot start.
RSpec.describe Sidekiq::LimitFetch, "credentials" do
  before { described_class.configuration[:heartbeat_period] = 1 }

  after do
    cleanup_limit_fetch # while the server still runs
    @server&.remove
  end

  # A server that wants +secret+ as given by +how+, and the redis options
  # that give it.
  def server_and_options(how, secret)
    password = how == :acl_user ? "default-pw" : secret
    @server = OwnRedisServer.new(password: password).start
    @acl_user = [how == :acl_user, secret]
    add_acl_user
    case how
    when :url then {url: @server.url(userinfo: ":#{secret}")}
    when :option then {url: @server.url, password: secret}
    when :acl_user then {url: @server.url(userinfo: "lf:#{secret}")}
    end
  end

  # Users made at run time do not survive a restart: made again after one.
  def add_acl_user
    acl, secret = @acl_user
    @server.with_client { |conn| conn.call("ACL", "SETUSER", "lf", "on", ">#{secret}", "~*", "&*", "+@all") } if acl
  end

  def capsule_with(options)
    build_capsule(queues: %w[a], limits: {a: 1}, redis_url: nil).tap { |capsule| capsule.config.redis = options }
  end

  # What the block raised (one of the gem's errors).
  def error_from
    yield
    nil
  rescue described_class::Error => e
    e
  end

  # Every place a secret could show up.
  def expect_no_secret(secret, *errors)
    texts = [spec_log.string] + errors.flat_map { |e| [e.message, e.full_message, e.inspect, e.cause&.message.to_s] }
    leaks = texts.select { |text| text.include?(secret) }
    expect(leaks).to be_empty, "#{secret} appeared in: #{leaks.join("\n---\n")}"
  end

  {
    "a password in the URL" => [:url, "Url-Pw-7f3a"],
    "a `password:` option" => [:option, "Opt-Pw-9c1e"],
    "an ACL user's password" => [:acl_user, "Acl-Pw-4d2b"]
  }.each do |name, (how, secret)|
    it "keeps #{name} out of logs and errors, through an outage and back" do
      options = server_and_options(how, secret)
      fetcher = fetcher_for(capsule_with(options))
      @server.with_client { |conn| conn.call("LPUSH", "queue:a", job_payload("a")) }
      expect(fetcher.retrieve_work&.queue_name).to eq("a")

      @server.stop
      wait_until(timeout: 10, message: -> { "the heartbeat's failures in the log:\n#{spec_log.string}" }) do
        spec_log.string.match?(/ERROR.*heartbeat failed/) && spec_log.string.match?(/WARN.*heartbeat still failing/)
      end
      fetch_error = error_from { fetcher.retrieve_work }
      startup_error = error_from { setup_capsule(capsule_with(options)) }
      expect([fetch_error, startup_error]).to all(be_a(described_class::ConnectionError))

      @server.start
      add_acl_user
      wait_until(timeout: 10, message: -> { "the heartbeat to recover:\n#{spec_log.string}" }) do
        spec_log.string.include?("heartbeat recovered")
      end
      expect_no_secret(secret, fetch_error, startup_error)
    end
  end
end
