# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    class CLI
      # Queues (Queue#to_h) as a text table, one row each, columns aligned.
      class Table
        HEADERS = %w[QUEUE LIMIT PROCESS_LIMIT RATE RUNNING QUEUED PAUSED STATE].freeze

        def initialize(queues)
          @queues = queues
        end

        def to_s
          return "no queues\n" if @queues.empty?

          TextTable.render(HEADERS, @queues.map { |queue| row(queue) })
        end

        private

        def row(queue)
          [
            queue[:name], global_limit(queue), limit(queue[:process_limit]), rate(queue), queue[:busy].to_s,
            queue[:queued].to_s, paused(queue), queue[:explain][:message]
          ]
        end

        def limit(value) = value.nil? ? "-" : value.to_s

        # Its number, or an adaptive limit's in force and range: "7 (1..20)";
        # a fair queue's fair limit: "fair 10" (after a limit it has too:
        # "5, fair 10").
        def global_limit(queue)
          text = own_limit(queue)
          fair = queue[:fair_limit]
          return text unless fair

          text == "-" ? "fair #{fair}" : "#{text}, fair #{fair}"
        end

        def own_limit(queue)
          adaptive = queue[:adaptive]
          return limit(queue[:limit]) unless adaptive

          "#{adaptive[:value]} (#{adaptive[:floor]}..#{adaptive[:ceiling]})"
        end

        # "100/60": starts per seconds, with the starts in the window now.
        def rate(queue)
          rate = queue[:rate]
          return "-" unless rate

          "#{Rate.new(**rate)} (#{queue.dig(:rate_window, :starts) || 0} now)"
        end

        def paused(queue)
          return "no" unless queue[:paused]

          queue[:paused_until] ? "until #{queue[:paused_until].utc.strftime("%H:%M:%SZ")}" : "yes"
        end
      end
    end
  end
end
