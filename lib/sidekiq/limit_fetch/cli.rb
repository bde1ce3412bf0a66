# frozen_string_literal: true

require "json"
require "stringio"
require "sidekiq/limit_fetch"
require "sidekiq/limit_fetch/cli/app"
require "sidekiq/limit_fetch/cli/app_options"
require "sidekiq/limit_fetch/cli/connection"
require "sidekiq/limit_fetch/cli/duration"
require "sidekiq/limit_fetch/cli/format_command"
require "sidekiq/limit_fetch/cli/job_limit_command"
require "sidekiq/limit_fetch/cli/job_table"
require "sidekiq/limit_fetch/cli/release_command"
require "sidekiq/limit_fetch/cli/options"
require "sidekiq/limit_fetch/cli/release_text"
require "sidekiq/limit_fetch/cli/table"
require "sidekiq/limit_fetch/cli/text_table"

module Sidekiq
  class LimitFetch < BasicFetch
    # The `sidekiq-limits` command: the console API (Queue) from a shell.
    # Connects like Sidekiq's client (--url, else the Redis of the app -r or
    # -C loads, else REDIS_URL) and says which Redis on stderr. Exit status:
    # 0 done, 2 bad input or Redis unreachable (one line on stderr, nothing
    # changed), 1 Redis refused a command.
    #
    #   sidekiq-limits list
    #   sidekiq-limits set webhooks 5 [--process]
    #   sidekiq-limits set partner_api 100/60 --rate
    #   sidekiq-limits set key:ApiJob#42 10/1 --job --rate
    #   sidekiq-limits pause webhooks --for 5m
    #   sidekiq-limits back-off key:ApiJob#42 30
    #   sidekiq-limits resume key:ApiJob#42
    #   sidekiq-limits release --all [--force]
    #   sidekiq-limits format [1|auto]
    class CLI
      include ReleaseCommand
      include JobLimitCommand

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
        @options.help? ? @out.puts(@options.help) || 0 : execute
      rescue UsageError, ArgumentError => e
        fail_with(e.message, 2)
      end

      private

      # The command's output is held until it is done, so that the line
      # naming the Redis it reached comes first.
      def execute
        @app = Connection.open(@options)
        out = @out
        @out = StringIO.new
        send(:"run_#{@options.action}", *@options.args)
        Connection.reached(@err, out, @out.string)
      rescue ConnectionError, RedisClient::ConnectionError => e
        fail_with(Connection.unreachable(e), 2)
      rescue Error, RedisClient::Error => e
        fail_with(refusal(e), 1)
      end

      # Sidekiq's queues and those with limits, and those the sidekiq.yml
      # names (-C), even with nothing in Redis.
      def run_list
        rows = (LimitFetch.queues.map(&:name) | @app.queues).sort.map { |name| LimitFetch.queue(name).to_h }
        @options.json? ? print_json(rows) : @out.print(Table.new(rows))
      end

      def run_set(name, _value)
        return run_set_job(name) if @options.job?

        queue = LimitFetch.queue(name)
        was = queue.public_send(kind)
        queue.public_send(:"#{kind}=", @options.limit)
        report(queue, "#{name}: #{kind_label} #{@options.limit.inspect} (was #{was.inspect})")
      end

      def run_unset(name)
        return run_unset_job(name) if @options.job?

        queue = LimitFetch.queue(name)
        was = queue.public_send(kind)
        queue.public_send(:"#{kind}=", nil)
        report(queue, "#{name}: #{kind_label} removed (was #{was.inspect})")
      end

      # A job limit by id: its stored limit or rate.
      def run_set_job(id)
        limit = JobLimit.new(id)
        was = stored(limit)
        limit.public_send(:"#{kind}=", @options.limit)
        report_job(limit, "#{id}: #{kind_label} #{@options.limit.inspect} (was #{was.inspect})")
      end

      def run_unset_job(id)
        limit = JobLimit.new(id)
        was = stored(limit)
        @options.rate? ? limit.reset_rate : limit.reset
        report_job(limit, "#{id}: stored #{kind_label} removed (was #{was.inspect})")
      end

      def run_pause(name)
        queue = LimitFetch.queue(name)
        if @options.duration
          queue.pause_for(@options.duration)
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

      def kind = @options.setting

      def kind_label = {rate: "rate", process_limit: "process limit", limit: "limit"}.fetch(kind)

      # The line for a person, or the queue as it is now for a script.
      def report(queue, line)
        @options.json? ? print_json(queue.to_h) : @out.puts(line)
      end

      def report_job(limit, line)
        @options.json? ? print_json(limit.to_h) : @out.puts(line)
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
    end
  end
end
