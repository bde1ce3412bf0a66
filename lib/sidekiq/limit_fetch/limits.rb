# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # Reads and checks `:limits` and `:process_limits` before anything is
    # written, so that a typo stops the boot instead of a queue.
    module Limits
      KINDS = {limits: :limit, process_limits: :process_limit}.freeze

      # A limit as text, the way the fetch script reads it: anything else
      # found in Redis counts as 0.
      NUMBER = /\A\s*\d+\s*\z/

      module_function

      # A limit as Redis stores it: a non-negative Integer, or nil for none.
      def coerce(queue, value, kind = :limit)
        case value
        when nil then nil
        when Integer then value.negative? ? invalid(queue, value, kind) : value
        when NUMBER then Integer(value.strip, 10)
        else invalid(queue, value, kind)
        end
      end

      def invalid(queue, value, kind)
        raise ArgumentError, "invalid #{kind} for queue #{queue.to_s.inspect}: #{value.inspect} " \
                             "(expected a non-negative Integer, or nil for no limit)"
      end

      # [[queue, kind, Integer], ...] for the capsule's queues; raises on bad input.
      def configured(capsule)
        KINDS.flat_map do |option, kind|
          table = capsule[option] || {}
          unless table.is_a?(Hash)
            raise ArgumentError, ":#{option} must be a Hash of queue => limit, got #{table.inspect}"
          end

          table.filter_map do |queue, value|
            value = coerce(queue, value, kind)
            [queue.to_s, kind, value] unless value.nil?
          end
        end
      end

      # Queues with limits that no capsule of this process works on.
      def unserved(capsule, entries)
        served = capsule.config.capsules.each_value.flat_map(&:queues)
        entries.map(&:first).uniq - served
      end
    end
  end
end
