# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    class CLI
      # The flags of Options that say where Redis is: --url, or the app to
      # load for it (-r, -C, -e; see App), checked with the rest of the
      # command line, before anything connects.
      module AppOptions
        attr_reader :url, :require_path, :config_file, :environment

        private

        def connection_flags(opts)
          opts.on("-r", "--require PATH", "load the app as sidekiq -r does (a file, or a Rails app's directory)",
            "and use the Redis its Sidekiq.configure_client set") { |path| @require_path = path }
          opts.on("-C", "--config FILE", "read a sidekiq.yml as sidekiq -C does (its :require, its queues)") do |file|
            @config_file = file
          end
          opts.on("-e", "--environment ENV", "the app's environment (default: APP_ENV, RAILS_ENV, RACK_ENV)") do |env|
            @environment = env
          end
          opts.on("--url URL", "Redis URL (default: the app's, else REDIS_URL, as Sidekiq)") { |url| @url = url }
        end

        def check_app_flags
          App.entry_point(require_path) if require_path
          raise UsageError, "-C #{config_file}: no such file" if config_file && !File.file?(config_file)
        end
      end
    end
  end
end
