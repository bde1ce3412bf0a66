# frozen_string_literal: true

require "openssl"

module Sidekiq
  class LimitFetch < BasicFetch
    # The Rust core connects with the settings Sidekiq's own client resolved
    # (from `config.redis`, REDIS_URL or REDIS_PROVIDER), so both always talk
    # to the same server and database.
    module RedisOptions
      module_function

      def for(capsule)
        capsule.redis { |conn| from_client_config(conn.config) }
      end

      # TLS options of Sidekiq's (redis-client's ssl_params) that the core
      # does not support; refused rather than silently ignored.
      UNSUPPORTED_SSL_PARAMS = %i[ca_path cert key].freeze

      # A RedisSettings from a RedisClient::Config, or a SentinelConfig
      # (Sidekiq's `sentinels:`), whose master the core finds through the
      # same sentinels: its host and port are not read here, as reading them
      # would ask the sentinels, once, and keep that answer.
      def from_client_config(config)
        params = ssl_params(config)
        RedisSettings.new(
          **address(config),
          db: config.db,
          username: config.username == "default" ? nil : config.username,
          password: config.password,
          tls: tls_mode(config, params),
          ca_certs: (File.binread(params[:ca_file]) if config.ssl && params[:ca_file]),
          timeout: config.read_timeout
        )
      end

      def address(config)
        return {host: nil, port: nil, path: nil, sentinel: sentinel_settings(config)} if config.sentinel?

        {host: config.host, port: config.port, path: config.path, sentinel: nil}
      end

      # The sentinels as Sidekiq's client asks them: each with its own
      # settings (redis-client gives them sentinel_username and
      # sentinel_password, and TLS only when `ssl:` was given explicitly).
      def sentinel_settings(config)
        # SentinelConfig keeps its role without a reader; a fetcher writes,
        # so only the master will do.
        role = config.instance_variable_get(:@role)
        unless role.nil? || role == :master
          raise ArgumentError, "sidekiq-limit_fetch: Redis Sentinel role must be :master (the fetcher writes), " \
                               "got #{role.inspect}"
        end
        SentinelSettings.new(
          master_name: config.name,
          sentinels: config.sentinels.map { |sentinel| from_client_config(sentinel) }
        )
      end

      def ssl_params(config)
        params = (config.ssl_params || {}).transform_keys(&:to_sym)
        unsupported = params.keys & UNSUPPORTED_SSL_PARAMS
        unless unsupported.empty?
          raise ArgumentError, "sidekiq-limit_fetch does not support ssl_params #{unsupported.inspect} " \
                               "(supported: ca_file, verify_mode)"
        end

        params
      end

      def tls_mode(config, params)
        return :off unless config.ssl == true

        params[:verify_mode] == OpenSSL::SSL::VERIFY_NONE ? :insecure : :verify
      end
    end
  end
end
