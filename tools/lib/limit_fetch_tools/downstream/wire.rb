# frozen_string_literal: true

require "uri"

module LimitFetchTools
  class Downstream
    # The little of HTTP/1.1 the downstream's server speaks: a request's line,
    # headers and body (read and dropped) off a socket, and a response with
    # its length, so that a connection is kept alive unless the client closes
    # it (HTTP/1.0, or "Connection: close").
    module Wire
      REASONS = {200 => "OK", 400 => "Bad Request", 404 => "Not Found", 429 => "Too Many Requests"}.freeze

      Request = Data.define(:verb, :path, :query, :close)

      module_function

      # The next Request; nil at the end of the connection.
      def read(socket)
        line = socket.gets("\r\n") or return
        verb, target, version = line.split
        headers = headers(socket)
        skip_body(socket, headers)
        path, query = target.to_s.split("?", 2)
        Request.new(verb:, path:, query: URI.decode_www_form(query.to_s).to_h,
          close: version != "HTTP/1.1" || headers["connection"]&.casecmp?("close") || false)
      end

      def skip_body(socket, headers)
        length = headers.fetch("content-length", "0").to_i
        socket.read(length) if length.positive?
      end

      def headers(socket)
        headers = {}
        while (line = socket.gets("\r\n")) && line != "\r\n"
          name, value = line.split(":", 2)
          headers[name.strip.downcase] = value.to_s.strip
        end
        headers
      end

      def write(socket, status, headers, body, close:)
        headers = headers.merge("Content-Length" => body.bytesize.to_s)
        headers["Connection"] = "close" if close
        lines = ["HTTP/1.1 #{status} #{REASONS.fetch(status)}", *headers.map { |name, value| "#{name}: #{value}" }]
        socket.write("#{lines.join("\r\n")}\r\n\r\n#{body}")
      end
    end
  end
end
