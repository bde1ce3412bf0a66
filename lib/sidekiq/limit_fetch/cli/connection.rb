# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    class CLI
      # Where `sidekiq-limits` connects, as Sidekiq's client: --url, else the
      # Redis the app's Sidekiq.configure_client set (App), else REDIS_URL.
      # What it says about that Redis never holds its password.
      module Connection
        module_function

        # Loads the app (-r, -C: App), then points Sidekiq's client where
        # --url says. Returns the App.
        def open(options)
          quiet_logger
          app = App.new(require_path: options.require_path, config_file: options.config_file,
            environment: options.environment)
          app.boot
          use(options.url)
          app
        end

        # A command is done: says on +err+ which Redis it reached, then
        # prints its +output+ on +out+. Returns 0, its exit status.
        def reached(err, out, output)
          err.puts "sidekiq-limits: #{described}"
          out.print(output)
          0
        end

        # Points Sidekiq's client (and so the console API) at +url+, or
        # leaves it where the app (or REDIS_URL) put it, after checking the
        # URL; nothing connects yet.
        def use(url)
          checked = url || ENV.fetch("REDIS_URL", nil)
          check(checked) if checked
          quiet_logger
          return unless url

          # Sidekiq's `redis=` merges into what the app set (its db, its
          # password would stay): --url gets a pool of its own instead, the
          # one Sidekiq::Client.via would put in place, for this thread (the
          # command runs on it alone).
          Thread.current[:sidekiq_redis_pool] = Sidekiq::RedisConnection.create(url: url, size: 1)
        end

        # Sidekiq logs to stdout by default, where scripts read the output.
        def quiet_logger
          Sidekiq.default_configuration.logger = Sidekiq::Logger.new(File::NULL)
        end

        # The Redis in use, for a person: host:port/db (rediss:// with TLS),
        # a Unix socket's path, or a Sentinel master's name; no password.
        def described
          config { |settings| described_config(settings) } || "Redis"
        end

        def described_config(settings)
          return "Redis Sentinel master #{settings.name.inspect}, db #{settings.db}" if settings.sentinel?
          return "Redis unix://#{settings.path}, db #{settings.db}" if settings.path

          "Redis #{settings.ssl ? "rediss" : "redis"}://#{settings.host}:#{settings.port}/#{settings.db}"
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
          "cannot reach #{described}: #{reason}"
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
