# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # What a valid `limit_fetch:` declaration is (JobLimits reads it): each
    # check returns the value as JobLimits keeps it, or raises an
    # ArgumentError naming the class, the option and the value.
    class DeclarationCheck
      OPTIONS = %i[concurrency key class_concurrency group per_queue on_limit rate back_off_on fair].freeze
      ON_LIMIT = %i[park discard].freeze
      KEY_ONLY = %i[class_concurrency group per_queue].freeze

      def initialize(class_name)
        @class_name = class_name
      end

      # The declaration with Symbol keys: a Hash of known options, key: a
      # callable, and the options that need key: given with it.
      def options(options)
        invalid("limit_fetch", "a Hash", options.class) unless options.is_a?(Hash)
        options = options.transform_keys(&:to_sym)
        unknown = options.keys - OPTIONS
        invalid("limit_fetch", "options among #{OPTIONS.inspect}", unknown) unless unknown.empty?
        check_key(options)
        check_fair(options)
        options
      end

      # fair: names each job's tenant, a key of its own: not with key:; and
      # a job over its share waits its turn, never discarded.
      def check_fair(options)
        return unless options.key?(:fair)

        invalid(:fair, "given without key: (its tenant is the key)", options[:key]) if options.key?(:key)
        invalid(:on_limit, ":park with fair:", options[:on_limit]) if options.fetch(:on_limit, :park) != :park
      end

      def check_key(options)
        key = options[:key]
        invalid(:key, "a callable (a lambda of the job's arguments)", key) if key && !key.respond_to?(:call)
        KEY_ONLY.each { |name| invalid(name, "used with key:", options[name]) if options.key?(name) && !key }
      end

      # The errors that back off (BackOffOn's rule).
      def back_off_on(value)
        BackOffOn.listed("#{@class_name}'s limit_fetch back_off_on", value)
      end

      # A limit, or an adaptive one's inclusive Range of limits from 1.
      def concurrency(name, value)
        return limit(name, value) unless value.is_a?(Range)

        return value if valid_range?(value)

        invalid(name, "an Integer from 0 to #{Limits::MAX}, or a Range of them from 1 (1..20)", value)
      end

      def valid_range?(range)
        first = range.begin
        last = range.end
        ends = first.is_a?(Integer) && last.is_a?(Integer) && !range.exclude_end?
        ends && first.between?(1, last) && last <= Limits::MAX
      end

      def limit(name, value)
        return value if value.is_a?(Integer) && value.between?(0, Limits::MAX)

        invalid(name, "an Integer from 0 to #{Limits::MAX}", value)
      end

      def on_limit(value)
        ON_LIMIT.include?(value) ? value : invalid(:on_limit, ON_LIMIT.map(&:inspect).join(" or "), value)
      end

      # A group, or the class name: "#" ends a scope in a key's id.
      def scope(value)
        value = value.to_s if value.is_a?(Symbol)
        return value if value.is_a?(String) && !value.empty? && !value.include?("#")

        invalid(:group, "a non-empty String or Symbol without \"#\"", value)
      end

      def per_queue(value)
        [true, false].include?(value) ? value : invalid(:per_queue, "true or false", value)
      end

      # {limit:, period:} as a Rate (Rates.coerce's rule).
      def rate(value)
        raise ArgumentError unless value.is_a?(Hash)

        Rates.coerce(:rate, value)
      rescue ArgumentError
        invalid(:rate, "{limit: a positive Integer, period: seconds from #{Rates::MIN_PERIOD} " \
                       "to #{Rates::MAX_PERIOD}}", value)
      end

      # A queue that is part of a key's scope (keys per queue).
      def queue(queue)
        queue = queue.to_s
        queue.include?("#") ? invalid(:queue, "free of \"#\" for keys per queue", queue) : queue
      end

      def missing(name)
        invalid(name, "given (or rate:, or key: with a default of 1, or back_off_on: alone)", nil)
      end

      def invalid(name, expected, got)
        raise ArgumentError, "sidekiq-limit_fetch: #{@class_name}'s limit_fetch #{name} must be #{expected}, " \
                             "got #{got.inspect}"
      end
    end
  end
end
