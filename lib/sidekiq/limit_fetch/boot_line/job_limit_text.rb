# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    class BootLine
      # One class's job limits as the boot line says them: its class limit
      # in force (stored, else declared), its keys' default, its rate, and
      # what it does at its limit. A declaration is checked as its first push will
      # check it: a broken one is said to be.
      class JobLimitText
        # +options+: the class's limit_fetch option, nil for a class
        # :class_limits names that is not loaded; +stored+: its class limit
        # in Redis, or nil.
        def initialize(name, options, stored)
          @name = name
          @options = options.is_a?(Hash) ? options.transform_keys(&:to_sym) : options
          @stored = stored
        end

        def to_s
          return "#{@name} #{@stored} (configured; class not loaded)" if @options.nil?

          JobLimits.new(@name, @options)
          "#{@name} #{[class_limit, key_limit, rate].compact.join(", ")}#{" (discarded at its limit)" if discard?}"
        rescue ArgumentError => e
          "#{@name} (invalid: #{e.message})"
        end

        private

        def keyed? = !@options[:key].nil?

        def class_limit
          limit = @stored || (keyed? ? @options[:class_concurrency] : @options[:concurrency])
          return if limit.nil?

          "#{limit.respond_to?(:call) ? "set at each push" : limit}#{" in all" if keyed?}"
        end

        def key_limit
          default = key_default
          return if default.nil?

          group = " of group #{@options[:group]}" if @options[:group]
          "#{default} per key#{group}#{" and queue" if @options[:per_queue]}"
        end

        # A key's concurrency: declared, else 1 unless a rate is given.
        def key_default
          return unless keyed?

          default = @options.fetch(:concurrency) { 1 unless @options[:rate] }
          default.respond_to?(:call) ? "set at each push" : default
        end

        # As declared: a class's stored rate is not read at boot.
        def rate
          return unless @options[:rate]

          "rate #{Rates.coerce(:rate, @options[:rate]).inspect}#{" per key" if keyed?}"
        end

        def discard? = @options[:on_limit] == :discard
      end
    end
  end
end
