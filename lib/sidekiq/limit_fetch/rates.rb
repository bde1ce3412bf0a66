# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # What a rate is: at most +limit+ job starts in any window of +period+
    # seconds, counted where jobs are taken (the fetch). Given as
    # {limit: 100, period: 60} (a class's `rate:`, a queue's in `:rates:`,
    # the console) or as Redis stores it, "100/60". Read the way the fetch
    # script reads it; spec/fixtures/rate_values.json holds the values every
    # reader must agree on.
    # Defined with the other shapes (shapes.rb); its text forms here.
    class Rate
      # As Redis stores it: "100/60".
      def to_s = "#{limit}/#{Rates.seconds_text(period)}"

      # "100/60 s"
      def inspect = "#{self} s"
    end

    module Rates
      MIN_PERIOD = 0.1
      MAX_PERIOD = 604_800
      SPACE = "[ \t\n\v\f\r]*"
      TEXT = %r{\A#{SPACE}([0-9]+)#{SPACE}/#{SPACE}([0-9]+(?:\.[0-9]*)?)#{SPACE}\z}
      KEYS = %i[limit period].freeze

      module_function

      # A stored rate as the fetch reads it: a Rate, or nil for a broken
      # value (the fetch reads it as no start at all).
      def parse(text)
        match = text.valid_encoding? && TEXT.match(text)
        return unless match

        rate(Integer(match[1], 10), Float(match[2].chomp(".")))
      end

      # +value+ ({limit:, period:} or "limit/period") as a Rate; raises
      # ArgumentError naming +what+ ("queue \"mailers\"'s rate") otherwise.
      # +limit+ must be at least 1: a rate of 0 would be a pause, which
      # pauses say better.
      def coerce(what, value)
        rate = case value
               when Hash then from_hash(value)
               when String then parse(value)
               when Rate then value
               end
        return rate if rate && rate.limit >= 1

        raise ArgumentError, "invalid #{what}: #{value.inspect} (expected {limit: a positive Integer, " \
                             "period: seconds from #{MIN_PERIOD} to #{MAX_PERIOD}}, or \"limit/period\")"
      end

      def from_hash(hash)
        hash = hash.transform_keys { _1.respond_to?(:to_sym) ? _1.to_sym : _1 }
        return unless hash.keys.sort == KEYS

        limit, period = hash.values_at(*KEYS)
        rate(limit, period) if period.is_a?(Integer) || period.is_a?(Float)
      end

      # A Rate if +limit+ and +period+ (Float seconds, compared before
      # rounding, as the script does) are valid; its period rounded to the
      # nearest microsecond, an Integer when whole.
      def rate(limit, period)
        return unless limit.is_a?(Integer) && limit.between?(0, Limits::MAX)
        return unless period.to_f.finite? && period.to_f.between?(MIN_PERIOD, MAX_PERIOD)

        micros = ((period.to_f * 1_000_000) + 0.5).floor
        Rate.new(limit, (micros % 1_000_000).zero? ? micros / 1_000_000 : micros / 1_000_000.0)
      end

      # DefaultRates of `:rates` (queue => {limit:, period:} or
      # "limit/period"); raises, naming the queue, on bad input.
      def configured(capsule)
        table = capsule[:rates] || {}
        raise ArgumentError, ":rates must be a Hash of queue => rate, got #{table.inspect}" unless table.is_a?(Hash)

        table.map do |queue, value|
          DefaultRate.new(queue: queue.to_s, rate: coerce("rate for queue #{queue.to_s.inspect}", value))
        end
      end

      # Seconds as a rate's text has them: 60, 0.5 (never an exponent).
      def seconds_text(seconds)
        return seconds.to_s if seconds.is_a?(Integer)

        format("%.6f", seconds).sub(/\.?0+\z/, "")
      end
    end
  end
end
