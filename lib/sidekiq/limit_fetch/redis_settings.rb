# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # Where and how the core reaches Redis, every field given (RedisOptions
    # builds it from what Sidekiq's client resolved): a Unix socket +path+,
    # or +host+ and +port+; +tls+ is :off, :verify (against the system's CAs,
    # or only those of +ca_certs+, PEM) or :insecure (no verification);
    # +timeout+ bounds every connect and reply; +sentinel+, a SentinelSettings
    # or nil: the master is the one the sentinels name, and +host+, +port+
    # (then nil) are not used. Native.new and NativeAdmin.new read it by
    # name; its members are listed in shapes.rb, which requires this file.
    class RedisSettings
      TLS_MODES = %i[off verify insecure].freeze

      def initialize(host:, port:, path:, db:, username:, password:, tls:, ca_certs:, timeout:, sentinel: nil) # rubocop:disable Metrics/ParameterLists
        super(
          **address(host, port, path, sentinel),
          db: Check.non_negative_integer(:db, db),
          username: Check.string(:username, username, optional: true),
          password: Check.string(:password, password, optional: true, secret: true),
          tls: tls_mode(tls),
          ca_certs: Check.string(:ca_certs, ca_certs, optional: true, secret: true),
          timeout: Check.seconds(:timeout, timeout),
          sentinel: sentinel
        )
      end

      # Never shows the password, nor the certificates' bytes.
      def inspect
        shown = to_h.merge(password: password && "[REDACTED]", ca_certs: ca_certs && "[#{ca_certs.bytesize} bytes]")
        "#<data #{self.class.name} #{shown.map { |key, value| "#{key}=#{value.inspect}" }.join(", ")}>"
      end
      alias to_s inspect

      def pretty_print(printer)
        printer.text(inspect)
      end

      private

      # A socket path wins over host and port, which may then be nil; so do
      # sentinels, which name the master, and take no socket path.
      def address(host, port, path, sentinel)
        if sentinel
          sentinel_address(host, port, path, sentinel)
        elsif path.nil?
          {host: Check.string(:host, host), port: tcp_port(port), path: nil}
        else
          {host: host && Check.string(:host, host), port: port && tcp_port(port), path: Check.string(:path, path)}
        end
      end

      def sentinel_address(host, port, path, sentinel)
        unless sentinel.is_a?(SentinelSettings)
          Check.invalid(:sentinel, "a #{SentinelSettings.name} or nil", sentinel, secret: true)
        end
        Check.invalid(:path, "nil behind sentinels", path) unless path.nil?
        {host: host && Check.string(:host, host), port: port && tcp_port(port), path: nil}
      end

      def tcp_port(port)
        return port if port.is_a?(Integer) && port.between?(1, 65_535)

        Check.invalid(:port, "an Integer from 1 to 65535", port)
      end

      def tls_mode(tls)
        return tls if TLS_MODES.include?(tls)

        Check.invalid(:tls, "one of #{TLS_MODES.map(&:inspect).join(", ")}", tls)
      end
    end
  end
end
