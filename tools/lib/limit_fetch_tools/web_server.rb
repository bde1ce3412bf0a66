# frozen_string_literal: true

require "puma"
require "puma/log_writer"
require "puma/server"
require "rack/builder"
require "rack/session"
require "securerandom"
require "sidekiq/web"
require "sidekiq/limit_fetch/web"

module LimitFetchTools
  # Sidekiq's Web UI, with the gem's Limits tab, served by puma from this
  # process on 127.0.0.1 and a free port, as an app would mount it (behind a
  # session). It reads the Redis of Sidekiq.default_configuration. Not
  # required by limit_fetch_tools.rb: it loads Sidekiq, puma and rack-session
  # (bin/demo once its app's bundle is set up, the browser test).
  class WebServer
    attr_reader :url

    def initialize(host: "127.0.0.1")
      @host = host
    end

    def start
      secret = SecureRandom.hex(32)
      app = Rack::Builder.new do
        use Rack::Session::Cookie, secret: secret, same_site: true, max_age: 86_400
        run Sidekiq::Web
      end
      @server = Puma::Server.new(app, nil, min_threads: 1, max_threads: 4, log_writer: Puma::LogWriter.null)
      @server.add_tcp_listener(@host, 0)
      @url = "http://#{@host}:#{@server.connected_ports.first}"
      @server.run
      self
    end

    def limits_url = "#{url}/limits"

    def stop
      @server&.stop(true)
      @server = nil
    end
  end
end
