# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # The rules the options crossing into the core are checked against, each
    # defined once. Every failure is an ArgumentError naming the option and,
    # unless the option is a secret, the value.
    module Check
      module_function

      # A positive, finite number of seconds, as a Float.
      def seconds(name, value)
        return value.to_f if seconds?(value)

        invalid(name, "a positive number of seconds", value)
      end

      def seconds?(value)
        value.is_a?(Numeric) && value.real? && value.positive? && value.finite?
      end

      def non_negative_integer(name, value)
        return value if value.is_a?(Integer) && !value.negative?

        invalid(name, "a non-negative Integer", value)
      end

      # An Integer from 1 to +max+.
      def positive_integer(name, value, max: 10_000)
        return value if value.is_a?(Integer) && value.between?(1, max)

        invalid(name, "an Integer from 1 to #{max}", value)
      end

      def boolean(name, value)
        return value if [true, false].include?(value)

        invalid(name, "true or false", value)
      end

      # A String, or nil when +optional+. A +secret+ is named by its class
      # only, never shown.
      def string(name, value, optional: false, secret: false)
        return value if value.is_a?(String) || (optional && value.nil?)

        expected = optional ? "a String or nil" : "a String"
        invalid(name, expected, value, secret: secret)
      end

      def invalid(name, expected, value, secret: false)
        got = secret ? "a #{value.class}" : value.inspect
        raise ArgumentError, "sidekiq-limit_fetch: #{name} must be #{expected}, got #{got}"
      end
    end
  end
end
