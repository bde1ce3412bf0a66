# frozen_string_literal: true

require "erb"
require "yaml"

module Sidekiq
  class LimitFetch < BasicFetch
    class CLI
      # The app `sidekiq-limits` loads, as `sidekiq` does, so that it reaches
      # the Redis the app configured: -C reads a sidekiq.yml (ERB, then YAML,
      # then its section for the environment), whose :require names the app
      # unless -r does; -r requires a file, or a Rails app's
      # config/environment.rb. Only `Sidekiq.configure_client` blocks run
      # (this is a client, as `Sidekiq::Client` and the Rails console are):
      # the Redis is theirs, else REDIS_URL's.
      class App
        # The queues the sidekiq.yml names (its own and its capsules'), for
        # `list`; empty without -C.
        attr_reader :queues

        def initialize(require_path:, config_file:, environment:)
          @environment = environment || ENV["APP_ENV"] || ENV["RAILS_ENV"] || ENV["RACK_ENV"] || "development"
          options = config_file ? self.class.parse_config(config_file, @environment) : {}
          @require_path = require_path || options[:require]
          @queues = queue_names(options)
        end

        # A sidekiq.yml's options, read as Sidekiq's CLI reads them.
        def self.parse_config(path, environment)
          options = symbolized(load_yaml(path))
          raise UsageError, "-C #{path}: not a sidekiq.yml (a Hash of options)" unless options.is_a?(Hash)

          options.merge(options.delete(environment.to_sym) || {})
        end

        def self.load_yaml(path)
          erb = ERB.new(File.read(path), trim_mode: "-")
          erb.filename = File.expand_path(path)
          YAML.safe_load(erb.result, permitted_classes: [Symbol], aliases: true) || {}
        rescue SystemCallError => e
          raise UsageError, "-C #{path}: #{e.message.sub(/ @ \w+ - .*\z/, "")}"
        rescue Psych::Exception => e
          raise UsageError, "-C #{path}: not valid YAML (#{e.message})"
        rescue ScriptError, StandardError => e
          raise UsageError, "-C #{path}: its ERB failed: #{e.class}: #{without_userinfo(e.message)}"
        end

        # The first line of an error's message, without the user and
        # password of any URL in it (a Redis URL, say).
        def self.without_userinfo(message)
          message.lines.first.to_s.chomp.gsub(%r{(\w+://)[^@/\s]*@}, '\1[FILTERED]@')
        end

        def self.symbolized(value)
          case value
          when Hash then value.to_h { |key, item| [key.respond_to?(:to_sym) ? key.to_sym : key, symbolized(item)] }
          else value
          end
        end

        # Requires the app (nothing without -r or a :require), after setting
        # the environment for it as `sidekiq -e` does, when given.
        def boot
          return unless @require_path

          ENV["RAILS_ENV"] = ENV["RACK_ENV"] = @environment
          require(*self.class.entry_point(@require_path))
        rescue UsageError
          raise
        rescue ScriptError, StandardError => e
          reason = self.class.without_userinfo(e.message)
          raise UsageError, "-r #{@require_path}: the app failed to load: #{e.class}: #{reason}"
        end

        # The file to require for -r PATH: the file, or a Rails app's
        # config/environment.rb.
        def self.entry_point(path)
          full = File.expand_path(path)
          raise UsageError, "-r #{path}: no such file or directory" unless File.exist?(full)
          return [full] unless File.directory?(full)

          environment = File.join(full, "config", "environment.rb")
          return [environment] if File.file?(environment)

          raise UsageError, "-r #{path}: a directory must be a Rails app (no config/environment.rb in it)"
        end

        private

        def queue_names(options)
          capsules = options[:capsules].is_a?(Hash) ? options[:capsules].values.grep(Hash) : []
          [options, *capsules].flat_map { |set| Array(set[:queues]) }.map { |entry| queue_name(entry) }
                              .reject(&:empty?).uniq
        end

        # Sidekiq's :queues entries: "name", "name,weight" or [name, weight].
        def queue_name(entry)
          (entry.is_a?(Array) ? entry.first : entry.to_s.split(",").first).to_s
        end
      end
    end
  end
end
