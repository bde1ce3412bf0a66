# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    class CLI
      # A duration as a person types it: 90 or 90s (seconds), 5m, 1h, 1d.
      module Duration
        UNITS = {nil => 1, "s" => 1, "m" => 60, "h" => 3600, "d" => 86_400}.freeze
        FORMAT = /\A(\d+)(s|m|h|d)?\z/

        module_function

        # Seconds (a positive Integer); a UsageError for anything else.
        def parse(text)
          match = FORMAT.match(text.to_s.strip)
          seconds = match && (Integer(match[1], 10) * UNITS.fetch(match[2]))
          return seconds if seconds&.positive?

          raise UsageError, "invalid duration #{text.inspect}: expected a positive number of seconds, " \
                            "or of minutes, hours or days (90, 90s, 5m, 1h, 1d)"
        end
      end
    end
  end
end
