# frozen_string_literal: true

require "json"
require "sidekiq/limit_fetch"
require "sidekiq/limit_fetch/cli/duration"
require "sidekiq/limit_fetch/cli/options"
require "sidekiq/limit_fetch/cli/table"

module Sidekiq
  class LimitFetch < BasicFetch
    # The `sidekiq-limits` command: the console API (Queue) from a shell.
    # Connects like Sidekiq (REDIS_URL, or --url). Exit status: 0 done, 2 bad
    # input or Redis unreachable (one line on stderr, nothing changed), 1
    # Redis refused a command.
    #
    #   sidekiq-limits list
    #   sidekiq-limits set webhooks 5 [--process]
    #   sidekiq-limits pause webhooks --for 5m
    class CLI
      # Bad input: its message goes to stderr as is, with exit status 2.
      class UsageError < StandardError; end

      def self.start(argv, out: $stdout, err: $stderr)
        new(out: out, err: err).run(argv)
      end

      def initialize(out:, err:)
        @out = out
        @err = err
      end

      # The exit status.
      def run(argv)
        @options = Options.new(argv)
        @options.help? ? @out.puts(@options.help) : execute
        0
      rescue UsageError, ArgumentError => e
        fail_with(e.message, 2)
      rescue ConnectionError, RedisClient::ConnectionError => e
        # redis-client ends its message with the URL, already given
        reason = redacted(e.message).sub(%r{ \(rediss?://[^)]*\)\z}, "")
        fail_with("cannot reach Redis at #{redis_config(&:server_url)}: #{reason}", 2)
      rescue Error, RedisClient::Error => e
        fail_with("Redis refused: #{redacted(e.message)}", 1)
      end

      private

      def execute
        connect
        send(:"run_#{@options.command}", *@options.args)
      end

      # Sidekiq's client and the console API use this Redis.
      def connect
        Sidekiq.default_configuration.redis = {url: @options.url} if @options.url
        Sidekiq.default_configuration.logger = Sidekiq::Logger.new(File::NULL)
      end

      def run_list
        rows = LimitFetch.queues.map(&:to_h)
        @options.json? ? print_json(rows) : @out.print(Table.new(rows))
      end

      def run_set(name, value)
        queue = LimitFetch.queue(name)
        was = queue.public_send(kind)
        limit = Limits.coerce(name, value, kind)
        queue.public_send(:"#{kind}=", limit)
        report(queue, "#{name}: #{kind_label} #{limit} (was #{was.inspect})")
      end

      def run_unset(name)
        queue = LimitFetch.queue(name)
        was = queue.public_send(kind)
        queue.public_send(:"#{kind}=", nil)
        report(queue, "#{name}: #{kind_label} removed (was #{was.inspect})")
      end

      def run_pause(name)
        queue = LimitFetch.queue(name)
        if @options.duration
          queue.pause_for(Duration.parse(@options.duration))
          report(queue, "#{name}: paused until #{queue.paused_until.utc.iso8601}")
        else
          queue.pause
          report(queue, "#{name}: paused until unpaused")
        end
      end

      def run_unpause(name)
        queue = LimitFetch.queue(name)
        report(queue, queue.unpause ? "#{name}: unpaused" : "#{name}: was not paused")
      end

      def run_explain(name)
        explanation = LimitFetch.queue(name).explain
        @options.json? ? print_json(explanation.to_h.merge(queue: name)) : @out.puts("#{name}: #{explanation}")
      end

      def kind = @options.process? ? :process_limit : :limit

      def kind_label = @options.process? ? "process limit" : "limit"

      # The line for a person, or the queue as it is now for a script.
      def report(queue, line)
        @options.json? ? print_json(queue.to_h) : @out.puts(line)
      end

      def print_json(value)
        @out.puts JSON.pretty_generate(jsonable(value))
      end

      def jsonable(value)
        case value
        when Hash then value.to_h { |key, item| [key.to_s, jsonable(item)] }
        when Array then value.map { |item| jsonable(item) }
        when Time then value.utc.iso8601(3)
        when Symbol then value.to_s
        else value
        end
      end

      def fail_with(message, status)
        @err.puts "sidekiq-limits: #{message}"
        status
      end

      def redacted(message)
        password = redis_config(&:password)
        password.is_a?(String) && !password.empty? ? message.gsub(password, "[FILTERED]") : message
      end

      # What the RedisClient::Config in use says (server_url has no password).
      def redis_config
        Sidekiq.default_configuration.redis { |conn| yield conn.config }
      rescue
        nil
      end
    end
  end
end
