# frozen_string_literal: true

require "optparse"

module Sidekiq
  class LimitFetch < BasicFetch
    class CLI
      # The command line of `sidekiq-limits`, checked before anything
      # connects: a UsageError names what is wrong.
      class Options
        prepend ReleaseFlags
        prepend JobLimitFlags
        prepend FormatArgument

        BANNER = <<~TEXT
          Usage: sidekiq-limits COMMAND [options]

          Commands:
            list [--job]                  every queue: limits, running, queued, paused, why (--job: job limits)
            set QUEUE N [--process]       set the global (or per process) limit to N (0: no new fetches)
            set QUEUE N/SECONDS --rate    at most N starts in any SECONDS (100/60, 5/0.5)
            set ID N[/SECONDS] --job      a job limit's (class:ApiJob, key:ApiJob#42) limit, or rate
            unset QUEUE [--process|--rate]  remove the global (or per process) limit, or the rate
            unset ID --job [--rate]       a job limit's stored limit (or rate): back to the declared one
            pause QUEUE [--for DURATION]  stop fetching from QUEUE (DURATION: 90, 90s, 5m, 1h, 1d)
            unpause QUEUE                 resume fetching from QUEUE
            explain QUEUE                 why QUEUE's next job is or is not fetched now
            explain ID --job              a job limit's state: running, parked, backing off, adaptive, fair share
            back-off ID DURATION          no job of the job limit ID starts, in any process, for DURATION
            resume ID                     end the job limit ID's back-off now
            release --all [--force]       every parked job, and every job of a capsule not alive, back
                                          to the front of its queue (before removing the gem)
            format [1|auto]               the data format in force, and each live capsule's; 1 pins
                                          format 1 (before a rollback), auto lets the census decide

          Options:
        TEXT

        # Each command and the arguments it takes.
        COMMANDS = {
          "list" => [], "set" => %w[QUEUE N], "unset" => %w[QUEUE], "pause" => %w[QUEUE], "unpause" => %w[QUEUE],
          "explain" => %w[QUEUE], "release" => [], "back-off" => %w[ID DURATION], "resume" => %w[ID],
          "format" => []
        }.freeze

        # +limit+: set's N, checked; +duration+: pause's --for (or
        # back-off's DURATION), in seconds.
        attr_reader :command, :args, :duration, :limit

        include AppOptions

        def initialize(argv)
          @args = parse(argv)
          return if help?

          @command = @args.shift or raise UsageError, "no command given (try --help)"
          check_command
          check_arguments
          check_flags
          check_values
        end

        def help? = @help
        def json? = @json
        def process? = @process
        def rate? = @rate

        def help = parser.help

        # The limit kind set and unset change.
        def kind = process? ? :process_limit : :limit

        # What set and unset change: :rate, :process_limit or :limit.
        def setting
          return :rate if rate?

          process? ? :process_limit : :limit
        end

        private

        def parser
          @parser ||= OptionParser.new do |opts|
            opts.banner = BANNER
            connection_flags(opts)
            opts.on("--json", "print JSON instead of a table") { @json = true }
            opts.on("--process", "set/unset: the limit in each process") { @process = true }
            opts.on("--rate", "set/unset: the rate (N/SECONDS)") { @rate = true }
            opts.on("--for DURATION", "pause: for this long, then fetch again") { |text| @duration_text = text }
            opts.on("-h", "--help", "print this help") { @help = true }
          end
        end

        def parse(argv)
          parser.parse(argv)
        rescue OptionParser::InvalidOption => e
          # "-1" reads as a flag to OptionParser: it is a bad limit.
          arg = e.args.first.to_s
          raise UsageError, "invalid limit #{arg}: a limit is a non-negative integer" if arg.match?(/\A-\d/)

          raise UsageError, "#{e.message} (try --help)"
        rescue OptionParser::ParseError => e
          raise UsageError, "#{e.message} (try --help)"
        end

        def check_command
          raise UsageError, "unknown command #{command.inspect} (try --help)" unless COMMANDS.key?(command)
        end

        def check_arguments
          expected = COMMANDS[command]
          missing = expected.drop(args.size).join(" and ")
          raise UsageError, "#{command}: missing #{missing} (usage: #{[command, *expected].join(" ")})" if missing != ""

          extra = args[expected.size]
          raise UsageError, "#{command}: unexpected argument #{extra.inspect}" if extra
        end

        def check_flags
          check_set_flags
          check_release_flags
          raise UsageError, "--for applies to pause only" if @duration_text && command != "pause"
        end

        # --process, --rate and --job: set and unset only (--job: explain
        # too), and not --process with either of the others.
        def check_set_flags
          flag = {"process" => process?, "rate" => rate?, "job" => job?}.find { _2 }&.first
          raise UsageError, "--#{flag} applies to #{flag_commands(flag)} only" if flag && !flag_applies?(flag)
          return unless process?

          raise UsageError, "--process and --rate: one or the other" if rate?
          raise UsageError, "--process applies to queues, not --job" if job?
        end

        # set's N (or N/SECONDS), checked.
        def set_value
          name, value = args
          return Rates.coerce("rate for #{job? ? "job limit" : "queue"} #{name.inspect}", value) if rate?

          Limits.coerce(name, value, job? ? :job_limit : kind)
        end

        def check_values
          @limit = set_value if command == "set"
          @duration = Duration.parse(@duration_text) if @duration_text
          check_job_limit_values
          check_app_flags
        end
      end
    end
  end
end
