# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # Reads and checks `:limits` and `:process_limits` before anything is
    # written, so that a typo stops the boot instead of a queue.
    module Limits
      KINDS = {limits: :limit, process_limits: :process_limit}.freeze

      # The largest limit, 2**53 - 1: the fetch script's numbers are doubles,
      # which hold every integer up to it exactly. No queue has that many jobs
      # running, so a larger value is a broken one, not "no limit".
      MAX = (2**53) - 1

      # A limit as text: decimal digits, with ASCII whitespace around (the
      # fetch script's %s).
      NUMBER = /\A[ \t\n\v\f\r]*[0-9]+[ \t\n\v\f\r]*\z/

      # A queue's adaptive limit in `:limits` (sidekiq.yml): "MIN..MAX".
      RANGE = /\A[ \t]*([0-9]+)[ \t]*\.\.[ \t]*([0-9]+)[ \t]*\z/

      module_function

      # What a stored limit reads as, the way the fetch script reads it: an
      # Integer, or nil for a broken value, which the script reads as 0. The
      # values every reader must agree on are in spec/fixtures/limit_values.json.
      def parse(text)
        return unless text.valid_encoding? && text.match?(NUMBER)

        value = Integer(text.strip, 10)
        value if value <= MAX
      end

      # A limit as Redis stores it: an Integer from 0 to MAX, or nil for none.
      def coerce(queue, value, kind = :limit)
        case value
        when nil then nil
        when Integer then value.between?(0, MAX) ? value : invalid(queue, value, kind)
        when String then parse(value) || invalid(queue, value, kind)
        else invalid(queue, value, kind)
        end
      end

      def invalid(name, value, kind)
        what = kind == :job_limit ? "job limit #{name.to_s.inspect}" : "#{kind} for queue #{name.to_s.inspect}"
        raise ArgumentError, "invalid #{what}: #{value.inspect} " \
                             "(expected a non-negative Integer up to #{MAX}, or nil for no limit)"
      end

      # DefaultLimits of the capsule's queues (an adaptive limit's floor),
      # of the class limits of `:class_limits` and of the fair queues of
      # `:fair_limits` (both named by id); raises on bad input.
      def configured(capsule)
        queue_limits = KINDS.flat_map do |option, kind|
          table(capsule, option, "queue").filter_map do |queue, value|
            range = range(queue, value) if kind == :limit
            value = range ? range.begin : coerce(queue, value, kind)
            DefaultLimit.new(name: queue.to_s, kind: kind, value: value) unless value.nil?
          end
        end
        queue_limits + class_limits(capsule) + fair_limits(capsule)
      end

      # A fair queue's limit (`:fair_limits`, see docs/fair-share.md) is the
      # stored value of the job limit its jobs' tenants share; its queue
      # takes no limit of `:limits` besides (the fetch walks a fair queue
      # to reach each tenant's jobs, as a queue at its limit is not).
      def fair_limits(capsule)
        limited = table(capsule, :limits, "queue").keys.map(&:to_s)
        table(capsule, :fair_limits, "queue").filter_map do |queue, value|
          if limited.include?(queue.to_s)
            raise ArgumentError, "queue #{queue.to_s.inspect} is in both :limits and :fair_limits " \
                                 "(a fair queue's limit is its :fair_limits value)"
          end
          value = coerce(queue, value, :fair_limit)
          DefaultLimit.new(name: JobLimitId.of_queue(queue), kind: :job_limit, value: value) unless value.nil?
        end
      end

      # DefaultRanges of the capsule's queues whose limit is adaptive
      # (`"1..20"`): its limit in force moves inside the range (see
      # docs/back-off.md).
      def ranges(capsule)
        table(capsule, :limits, "queue").filter_map do |queue, value|
          range = range(queue, value)
          DefaultRange.new(queue: queue.to_s, floor: range.begin, ceiling: range.end) if range
        end
      end

      # An adaptive limit's Range from +value+ ("MIN..MAX", or a Range of
      # Integers), nil for a value that is not one; raises, naming the queue,
      # on a broken one.
      def range(queue, value)
        bounds = bounds(value)
        return if bounds == :none
        return bounds[0]..bounds[1] if valid_range?(bounds)

        raise ArgumentError, "invalid adaptive limit for queue #{queue.to_s.inspect}: #{value.inspect} " \
                             "(expected \"MIN..MAX\" with 1 <= MIN <= MAX <= #{MAX})"
      end

      def class_limits(capsule)
        table(capsule, :class_limits, "job class").filter_map do |job_class, value|
          id = JobLimitId.of_class(job_class)
          value = coerce(id, value, :job_limit)
          DefaultLimit.new(name: id, kind: :job_limit, value: value) unless value.nil?
        end
      end

      def table(capsule, option, what)
        table = capsule[option] || {}
        return table if table.is_a?(Hash)

        raise ArgumentError, ":#{option} must be a Hash of #{what} => limit, got #{table.inspect}"
      end

      # [MIN, MAX] as +value+ gives them (nil if they do not read), or :none
      # for a value that is not a range.
      def bounds(value)
        case value
        when Range then [value.begin, value.end] unless value.exclude_end?
        when /\.\./ then RANGE.match(value)&.captures&.map { Integer(_1, 10) }
        else :none
        end
      end

      def valid_range?(bounds)
        bounds&.all?(Integer) && bounds[0].between?(1, bounds[1]) && bounds[1] <= MAX
      end

      # Queues with limits (DefaultLimits) that no capsule of this process
      # works on.
      def unserved(capsule, limits)
        served = capsule.config.capsules.each_value.flat_map(&:queues)
        limits.filter_map { |limit| limit.name unless limit.kind == :job_limit }.uniq - served
      end
    end
  end
end
