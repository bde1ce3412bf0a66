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

      def from_client_config(config)
        {
          "host" => config.host,
          "port" => config.port,
          "path" => config.path,
          "db" => config.db,
          "username" => config.username == "default" ? nil : config.username,
          "password" => config.password,
          "ssl" => config.ssl == true,
          "ssl_verify" => (config.ssl_params || {})[:verify_mode] != OpenSSL::SSL::VERIFY_NONE,
          "timeout" => config.read_timeout&.to_f
        }
      end
    end
  end
end
