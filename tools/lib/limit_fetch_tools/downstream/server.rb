# frozen_string_literal: true

require "json"
require "optparse"
require "socket"
require_relative "../../limit_fetch_tools"
require_relative "ledger"
require_relative "wire"

module LimitFetchTools
  class Downstream
    # The simulated downstream's HTTP/1.1 server (plain TCPServer, a thread
    # per connection, keep-alive unless the client says close), run as a
    # process of its own by Downstream#start (this file is its program).
    # Routes:
    #   GET  /call?tenant=T&ms=50   holds the call ms milliseconds, then 200;
    #                               429 at once, with Retry-After, if T has
    #                               `capacity` calls in flight
    #   POST /capacity?n=2          each tenant's capacity from now on
    #   POST /reset?capacity=4&retry_after=0.2&mode=seconds|date
    #                               forgets every count; each setting optional
    #   GET  /stats                 Ledger#to_h as JSON
    #   GET  /health                200 once listening
    # A bad request gets 400 naming what was wrong.
    class Server
      def self.main(argv)
        settings = {port: 0, capacity: 4, retry_after: 0.2, mode: "seconds", sample_interval: 0.05}
        OptionParser.new do |opts|
          opts.on("--port N", Integer) { settings[:port] = _1 }
          opts.on("--capacity N", Integer) { settings[:capacity] = _1 }
          opts.on("--retry-after S", Float) { settings[:retry_after] = _1 }
          opts.on("--mode MODE", String) { settings[:mode] = _1 }
          opts.on("--sample-interval S", Float) { settings[:sample_interval] = _1 }
        end.parse!(argv)
        new(**settings).run
      end

      def initialize(port:, capacity:, retry_after:, mode:, sample_interval:)
        @ledger = Ledger.new(capacity:, retry_after:, mode:)
        @sample_interval = sample_interval
        @listener = TCPServer.new("127.0.0.1", port)
      end

      def port = @listener.addr[1]

      def run
        $stdout.sync = true
        Signal.trap("TERM") { exit }
        puts "downstream listening on 127.0.0.1:#{port}"
        Thread.new { sample_every(@sample_interval) }
        loop { Thread.new(@listener.accept) { serve(_1) } }
      end

      private

      # On a fixed schedule, so that samples stay evenly spaced.
      def sample_every(interval)
        tick = LimitFetchTools.monotonic
        loop do
          @ledger.sample
          tick += interval
          sleep [tick - LimitFetchTools.monotonic, 0].max
        end
      end

      def serve(socket)
        @ledger.connected
        while (request = Wire.read(socket))
          Wire.write(socket, *answer(request.verb, request.path, request.query), close: request.close)
          break if request.close
        end
      rescue IOError, SystemCallError
        nil # the client went away
      ensure
        socket.close
      end

      def answer(method, path, query)
        case [method, path]
        when %w[GET /call] then call(query)
        when %w[POST /capacity] then capacity(query)
        when %w[POST /reset] then reset(query)
        when %w[GET /stats] then json(200, @ledger.to_h)
        when %w[GET /health] then json(200, "ok" => true)
        else json(404, "error" => "no route #{method} #{path}")
        end
      rescue ArgumentError => e
        json(400, "error" => e.message)
      end

      def call(query)
        tenant = query["tenant"]
        raise ArgumentError, "tenant: missing" if tenant.nil? || tenant.empty?

        millis = number(query, "ms", Float)
        raise ArgumentError, "ms: #{query["ms"].inspect} is negative" if millis.negative?

        ticket = @ledger.admit(tenant)
        return json(429, {"error" => "too many requests", "tenant" => tenant}, "Retry-After" => ticket) if
          ticket.is_a?(String)

        hold(millis, ticket, tenant)
      end

      def hold(millis, ticket, tenant)
        sleep(millis / 1000.0)
        json(200, "tenant" => tenant, "ms" => millis)
      ensure
        @ledger.release(ticket)
      end

      def capacity(query)
        @ledger.capacity = number(query, "n", Integer)
        json(200, "capacity" => query["n"].to_i)
      end

      def reset(query)
        settings = {}
        settings[:capacity] = number(query, "capacity", Integer) if query.key?("capacity")
        settings[:retry_after] = number(query, "retry_after", Float) if query.key?("retry_after")
        settings[:mode] = query["mode"] if query.key?("mode")
        @ledger.reset(**settings)
        json(200, "reset" => true)
      end

      def number(query, name, type)
        value = query[name]
        Kernel.public_send(type.name, value)
      rescue ArgumentError, TypeError
        raise ArgumentError, "#{name}: #{value.inspect} is not #{type == Integer ? "an integer" : "a number"}"
      end

      def json(status, body, headers = {})
        [status, headers.merge("Content-Type" => "application/json"), JSON.generate(body)]
      end
    end
  end
end

LimitFetchTools::Downstream::Server.main(ARGV) if $PROGRAM_NAME == __FILE__
