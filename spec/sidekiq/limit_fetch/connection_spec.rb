# frozen_string_literal: true

require_relative "../../support/own_redis_server"
require_relative "../../support/test_certificates"

# The Rust core connects with the options Sidekiq resolved from
# `config.redis` (and REDIS_URL): a Unix socket, a password, an ACL user, a
# database. Each example checks that the gem's own connection, not only
# Sidekiq's, reached the intended server and database.
RSpec.describe Sidekiq::LimitFetch, "connection options" do
  let(:servers) { [] }

  # A redis-server of the example's own, removed after it.
  def own_server(**)
    OwnRedisServer.new(**).start.tap { |server| servers << server }
  end

  # A capsule whose config.redis is exactly +options+ (REDIS_URL, pointing
  # at the suite's server, still fills in what they leave out, as it does
  # in production).
  def capsule_with(options, queues: %w[a], limits: {a: 3})
    capsule = build_capsule(queues: queues, limits: limits, redis_url: nil)
    capsule.config.redis = options
    capsule
  end

  # The connections the Rust core opened (it names itself "redis-rs").
  def core_connections(conn)
    conn.call("CLIENT", "LIST").lines.select { |line| line.include?("lib-name=redis-rs") }
  end

  # Sets the capsule up and works one job through it on +conn+'s server and
  # database: registration, limits, fetch, busy slot, release all land there.
  def expect_working(capsule, conn)
    fetcher = fetcher_for(capsule)
    uuid = uuid_of(capsule)
    expect(conn.call("SMEMBERS", LimitFetchHelpers::CAPSULES_KEY)).to eq([uuid])
    expect(conn.call("GET", queue_key("a", "limit"))).to eq("3")
    job = job_payload("a")
    conn.call("LPUSH", "queue:a", job)

    unit = fetcher.retrieve_work
    expect([unit&.queue_name, unit&.job]).to eq(["a", job])
    expect(conn.call("LRANGE", queue_key("a", "busy"), 0, -1)).to eq([uuid])
    unit.acknowledge
    flush_acks(capsule)
    expect(conn.call("LLEN", queue_key("a", "busy"))).to eq(0)
    # nothing of the gem's went to the suite's server
    expect(limit_fetch_keys).to be_empty
  end

  # Setting the capsule up fails; returns the error.
  def setup_error(capsule)
    error = nil
    expect { setup_capsule(capsule) }.to(raise_error { |e| error = e })
    error
  end

  after do
    cleanup_limit_fetch # while the servers still run: deregistration talks to them
    servers.each(&:remove)
    RedisServer.with_client(db: 3) { |conn| conn.call("FLUSHDB") }
  end

  it "connects through a Unix socket given as `path:`" do
    server = own_server(unix_socket: true)
    capsule = capsule_with({path: server.socket_path})

    server.with_client do |conn|
      expect_working(capsule, conn)
      connections = core_connections(conn)
      expect(connections).not_to be_empty
      # Valkey writes a socket's address in brackets, with a port: [path:0]:0.
      expect(connections).to all(match(/addr=\[?#{Regexp.escape(server.socket_path)}[: ]/))
    end
  end

  it "authenticates with a password given in the URL" do
    server = own_server(password: "s3cret-in-url")
    capsule = capsule_with({url: server.url(userinfo: ":s3cret-in-url")})

    server.with_client { |conn| expect_working(capsule, conn) }
  end

  it "authenticates with a `password:` option" do
    server = own_server(password: "s3cret-option")
    capsule = capsule_with({url: server.url, password: "s3cret-option"})

    server.with_client { |conn| expect_working(capsule, conn) }
  end

  context "with an ACL user" do
    # The default user has another password: only user "lf" with its own
    # password gets in, so a client that dropped the username fails.
    def acl_server
      server = own_server(password: "default-pw")
      server.with_client { |conn| conn.call("ACL", "SETUSER", "lf", "on", ">lf-pw", "~*", "&*", "+@all") }
      server
    end

    it "authenticates as the user given in the URL" do
      server = acl_server
      capsule = capsule_with({url: server.url(userinfo: "lf:lf-pw")})

      server.with_client do |conn|
        expect_working(capsule, conn)
        expect(core_connections(conn)).to all(include(" user=lf "))
      end
    end

    it "authenticates as the user given as `username:` and `password:`" do
      server = acl_server
      capsule = capsule_with({url: server.url, username: "lf", password: "lf-pw"})

      server.with_client do |conn|
        expect_working(capsule, conn)
        expect(core_connections(conn)).to all(include(" user=lf "))
      end
    end

    it "refuses to start, with the gem's CommandError, where the user lacks a permission" do
      server = acl_server
      server.with_client { |conn| conn.call("ACL", "SETUSER", "lf", "-fcall") }
      capsule = capsule_with({url: server.url(userinfo: "lf:lf-pw")})

      expect { fetcher_for(capsule) }.to raise_error(described_class::CommandError, /add \+fcall to its ACL rules/)
    end
  end

  it "uses the database of the URL" do
    capsule = capsule_with({url: RedisServer.url_for_db(3)})

    RedisServer.with_client(db: 3) do |conn|
      conn.call("FLUSHDB")
      expect_working(capsule, conn)
      expect(conn.call("EXISTS", heartbeat_key(uuid_of(capsule)))).to eq(1)
      expect(core_connections(conn)).to include(match(/\bdb=3\b/))
    end
  end

  it "uses the database of a `db:` option" do
    capsule = capsule_with({url: RedisServer.url, db: 3})

    RedisServer.with_client(db: 3) do |conn|
      conn.call("FLUSHDB")
      expect_working(capsule, conn)
    end
  end

  context "over TLS (rediss://)" do
    let(:certificates) { TestCertificates.new }
    let(:tls_port) { TCPServer.open("127.0.0.1", 0) { |server| server.addr[1] } }

    after { certificates.remove }

    # Listens on a TLS port besides its plain one, which the spec's own
    # client uses.
    def tls_server
      own_server(args: certificates.redis_args(tls_port))
    end

    def tls_options(**ssl_params)
      {url: "rediss://127.0.0.1:#{tls_port}/0", ssl_params: ssl_params}
    end

    it "verifies the server against the CA of ssl_params[:ca_file]" do
      server = tls_server
      capsule = capsule_with(tls_options(ca_file: certificates.path("ca.crt")))

      expect(capsule.redis { |conn| conn.call("PING") }).to eq("PONG") # Sidekiq's own client agrees
      server.with_client do |conn|
        expect_working(capsule, conn)
        connections = core_connections(conn)
        expect(connections).not_to be_empty
        expect(connections).to all(include("laddr=127.0.0.1:#{tls_port}"))
      end
    end

    it "refuses a server whose certificate another CA signed, with an error that says so" do
      tls_server
      capsule = capsule_with(tls_options(ca_file: certificates.path("other_ca.crt")))

      error = setup_error(capsule)
      expect(error).to be_a(described_class::ConnectionError)
      expect(error.message).to match(/certificate/i)
    end

    it "refuses a server whose certificate no CA of the system's signed, by default" do
      tls_server
      capsule = capsule_with(tls_options)

      error = setup_error(capsule)
      expect(error).to be_a(described_class::ConnectionError)
      expect(error.message).to match(/certificate/i)
    end

    it "connects without verification with verify_mode: VERIFY_NONE" do
      server = tls_server
      capsule = capsule_with(tls_options(verify_mode: OpenSSL::SSL::VERIFY_NONE))

      server.with_client { |conn| expect_working(capsule, conn) }
    end

    it "refuses ssl_params it cannot honour rather than connecting without them" do
      capsule = capsule_with(tls_options(ca_file: certificates.path("ca.crt"), cert: "client.crt"))

      error = setup_error(capsule)
      expect(error).to be_a(ArgumentError)
      expect(error.message).to include("[:cert]")
    end
  end

  describe "with wrong credentials" do
    let(:server) { own_server(password: "right-pw") }

    # The error setup raises: one of the gem's, naming the cause, and neither
    # it nor the log shows the password.
    def expect_clear_error(capsule, password)
      error = setup_error(capsule)
      expect(error).to be_a(described_class::Error)
      expect(error.message).to match(/WRONGPASS|auth|password/i)
      expect(error.message).not_to include(password)
      expect(error.full_message).not_to include(password)
      expect(spec_log.string).not_to include(password)
      error
    end

    it "raises a clear error without the password when the URL's password is wrong" do
      capsule = capsule_with({url: server.url(userinfo: ":Wrong-Pw-1")})

      expect_clear_error(capsule, "Wrong-Pw-1")
    end

    it "raises a clear error without the password when the `password:` option is wrong" do
      capsule = capsule_with({url: server.url, password: "Wrong-Pw-2"})

      expect_clear_error(capsule, "Wrong-Pw-2")
    end

    it "raises a clear error without the password when the ACL user's password is wrong" do
      server.with_client { |conn| conn.call("ACL", "SETUSER", "lf", "on", ">lf-pw", "~*", "&*", "+@all") }
      capsule = capsule_with({url: server.url(userinfo: "lf:Wrong-Pw-3")})

      expect_clear_error(capsule, "Wrong-Pw-3")
    end

    it "raises a clear error when the password is missing" do
      capsule = capsule_with({url: server.url})

      error = setup_error(capsule)
      expect(error).to be_a(described_class::Error)
      expect(error.message).to match(/NOAUTH|auth/i)
    end
  end
end
