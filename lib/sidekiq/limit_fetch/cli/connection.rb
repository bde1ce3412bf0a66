# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    class CLI
      # Where `sidekiq-limits` connects, as Sidekiq: REDIS_URL, or --url. What
      # it says about that Redis never holds its password.
      module Connection
        module_function

        # Points Sidekiq's client (and so the console API) at +url+, or at
        # REDIS_URL when nil, after checking the URL; nothing connects yet.
        def use(url)
          checked = url || ENV.fetch("REDIS_URL", nil)
          check(checked) if checked
          Sidekiq.default_configuration.redis = {url: url} if url
          Sidekiq.default_configuration.logger = Sidekiq::Logger.new(File::NULL)
        end

        def check(url)
          RedisClient.config(url: url)
        rescue ArgumentError, URI::Error
          raise UsageError, "invalid Redis URL (expected redis://[:password@]host[:port][/db], rediss://... " \
                            "or unix:///path)"
        end

        # One line for a connection error.
        def unreachable(error)
          # redis-client ends its message with the URL, given first here
          reason = redacted(error.message).sub(%r{ \((?:rediss?|unix)://[^)]*\)\z}, "")
          "cannot reach Redis at #{config(&:server_url)}: #{reason}"
        end

        def redacted(message)
          password = config(&:password)
          password.is_a?(String) && !password.empty? ? message.gsub(password, "[FILTERED]") : message
        end

        # What the RedisClient::Config in use says (server_url has no password).
        def config
          Sidekiq.default_configuration.redis { |conn| yield conn.config }
        rescue
          nil
        end
      end
    end
  end
end
