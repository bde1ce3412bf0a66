# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    module Web
      # A change asked for by one of the tab's forms. ::limit, ::pause and
      # ::unpause check the form's fields and raise ArgumentError, with a
      # message for the page, before anything is changed; #apply makes it.
      # The form names its queue encoded (QueueField), one Redis knows (one
      # the tab lists): a form of a queue removed since, or one no page
      # sent, changes nothing, rather than making a queue of that name.
      class Change
        # The forms, each posted to /limits/<action>.
        ACTIONS = %w[limit process_limit fair_limit rate pause unpause resume].freeze
        UNITS = {"seconds" => 1, "minutes" => 60, "hours" => 3600}.freeze
        # The longest pause with a duration: longer is a typo (a year of
        # seconds where minutes were meant); pause without one instead.
        MAX_PAUSE = 366 * 24 * 3600
        WHOLE_NUMBER = /\A[ \t]*[0-9]+[ \t]*\z/

        class << self
          # The change the form of +action+ asks for, from its fields (a Hash);
          # a job limit's resume is a Resume.
          def from_form(action, fields)
            queue = fields[QueueField::NAME]
            case action
            when "limit", "process_limit", "fair_limit" then limit(queue, fields["value"], action.to_sym)
            when "rate" then rate(queue, fields["value"])
            when "pause" then pause(queue, fields["for"], fields["unit"])
            when "unpause" then unpause(queue)
            when "resume" then Resume.from_form(fields)
            else raise ArgumentError, "no such change: #{action.inspect}"
            end
          end

          # Sets the queue's +kind+ (:limit, :process_limit, or a fair
          # queue's :fair_limit) to +value+, a limit as Limits reads one;
          # blank removes it (a fair queue's: the queue is no longer fair).
          def limit(queue, value, kind)
            queue = name(queue)
            text = text(value, "the #{kind.to_s.tr("_", " ")}")
            limit = blank?(text) ? nil : Limits.coerce(queue, text, kind)
            new(queue) { _1.public_send(:"#{kind}=", limit) }
          end

          # Sets the queue's rate to +value+, "limit/period" (Rates.coerce);
          # blank removes it.
          def rate(queue, value)
            queue = name(queue)
            text = text(value, "the rate")
            rate = blank?(text) ? nil : Rates.coerce("rate for queue #{queue.inspect}", text.strip)
            new(queue) { _1.rate = rate }
          end

          # Pauses the queue for +amount+ +unit+s, or until unpaused when
          # +amount+ is blank.
          def pause(queue, amount, unit)
            queue = name(queue)
            seconds = duration(text(amount, "the pause duration"), text(unit, "the pause unit"))
            new(queue) { seconds ? _1.pause_for(seconds) : _1.pause }
          end

          def unpause(queue)
            new(name(queue), &:unpause)
          end

          private

          def name(queue)
            queue = text(queue, "the queue")
            raise ArgumentError, "no queue named in the form" if queue.empty?

            name = QueueField.decode(queue)
            return name if LimitFetch.queues.any? { _1.name == name }

            raise ArgumentError, "Redis knows no queue #{name.inspect} (removed since the page was shown?)"
          end

          def duration(amount, unit)
            return if blank?(amount)

            factor = UNITS.fetch(unit) do
              raise ArgumentError, "invalid pause unit #{unit.inspect} (expected one of #{UNITS.keys.join(", ")})"
            end
            seconds = Integer(amount.strip, 10) * factor if amount.match?(WHOLE_NUMBER)
            return seconds if seconds&.between?(1, MAX_PAUSE)

            raise ArgumentError, "invalid pause duration #{amount.inspect} #{unit} (expected a whole number from 1, " \
                                 "up to #{MAX_PAUSE / 86_400} days; leave it blank to pause until unpaused)"
          end

          # A form field as a String; one sent as an array or a hash
          # (`queue[]=`) is refused.
          def text(value, what)
            return "" if value.nil?
            raise ArgumentError, "#{what} must be one value, got #{value.inspect}" unless value.is_a?(String)
            raise ArgumentError, "#{what} is not valid UTF-8: #{value.inspect}" unless value.valid_encoding?

            value
          end

          def blank?(text) = text.strip.empty?
        end

        attr_reader :queue

        def initialize(queue, &action)
          @queue = queue
          @action = action
        end

        def apply
          @action.call(LimitFetch.queue(queue))
        end
      end
    end
  end
end
