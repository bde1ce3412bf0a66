# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    class CLI
      # `format [1|auto]`: its optional argument, which Options takes and
      # checks (prepended to it).
      module FormatArgument
        private

        def check_arguments
          return super unless command == "format"

          value, extra = args
          raise UsageError, "format: unexpected argument #{extra.inspect}" if extra
          return if value.nil? || DataFormat::SETTINGS.key?(value)

          raise UsageError, "format: #{value.inspect} is not 1 (pin format 1) or auto (the census decides)"
        end
      end

      # `format`: the data format in force and each live capsule's highest;
      # `format 1` pins format 1 (the first step of a rollback to a release
      # that reads format 1 alone) and converts format 2's data back;
      # `format auto` lets the census decide again (DataFormat).
      module FormatCommand
        private

        def run_format(value = nil)
          return show_format(LimitFetch.data_format) unless value

          change = DataFormat.set(LimitFetch.admin, value)
          @options.json? ? print_json(change.to_h) : @out.puts(format_change(change))
        end

        def show_format(read)
          return print_json(read.to_h) if @options.json?

          count = read.capsules.size
          @out.puts "data #{read}", "#{count} live #{count == 1 ? "capsule" : "capsules"}#{":" if count.positive?}"
          read.capsules.each { |capsule, highest| @out.puts capsule_format(capsule, highest) }
        end

        def capsule_format(capsule, highest)
          old = highest < 2 ? " (an older release, or v5)" : ""
          "  #{[capsule.label, capsule.name].compact.join(" ")}: speaks up to format #{highest}#{old}"
        end

        def format_change(change)
          line = "data #{change.now} (was #{change.was})"
          return line if change.converted.zero?

          "#{line}; #{change.converted} data of format 2 converted back to format 1"
        end
      end

      # Here rather than in cli.rb, with the other commands: CLI's class body
      # is at the length rubocop allows.
      include FormatCommand
    end
  end
end
