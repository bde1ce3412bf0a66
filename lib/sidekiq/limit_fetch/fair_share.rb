# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # A class's `fair:` option (JobLimits reads it): its slots (its
    # concurrency:) shared among the tenants that have work, by weight.
    #
    #   fair: ->(tenant_id, *) { tenant_id }
    #   fair: {by: ->(tenant_id, *) { tenant_id }, weight: ->(tenant_id, *) { gold?(tenant_id) ? 3 : 1 }}
    #
    # Both callables are given the job's arguments when it is pushed: the
    # tenant is a key (JobKey's rule; nil: the job takes no share and waits
    # behind the class's limit alone), its weight a positive number up to
    # MAX_WEIGHT (1 if no weight: is given).
    class FairShare
      MAX_WEIGHT = 1000
      OPTIONS = %i[by weight].freeze

      def initialize(class_name, option)
        @class_name = class_name
        @by, @weight = read(option)
      end

      # The tenant's entry of a job pushed with +args+, {"id" =>, "fair" =>
      # +class_id+, "weight" => (unless 1), "rate" => (with a +rate+, each
      # tenant's)}, its id built by the block from the tenant; nil for a job
      # without a tenant.
      def entry(args, class_id, rate = nil)
        tenant = tenant(args)
        return if tenant.nil?

        entry = {"id" => yield(tenant), "fair" => class_id}
        weight = weight(args)
        entry["weight"] = weight unless weight == 1
        entry["rate"] = [rate.limit, rate.period] if rate
        entry
      end

      private

      # The tenant of a job pushed with +args+, as a key, or nil.
      def tenant(args)
        tenant = called(:by, @by, args)
        JobKey.checked(@class_name, tenant) unless tenant.nil?
      end

      # The weight of a job pushed with +args+.
      def weight(args)
        return 1 unless @weight

        weight = called(:weight, @weight, args)
        return weight if weight.is_a?(Numeric) && weight.real? && weight.positive? && weight <= MAX_WEIGHT

        raise ArgumentError, "sidekiq-limit_fetch: the fair weight of #{@class_name} must be a number above 0 " \
                             "and at most #{MAX_WEIGHT}, got #{weight.inspect}"
      end

      def read(option)
        option = option.is_a?(Hash) ? option.transform_keys(&:to_sym) : {by: option}
        unknown = option.keys - OPTIONS
        invalid("a callable, or a Hash of by: and weight:", unknown) unless unknown.empty?
        by, weight = option.values_at(*OPTIONS)
        invalid("a callable (a lambda of the job's arguments), or {by:, weight:}", by) unless by.respond_to?(:call)
        callable = weight.nil? || weight.respond_to?(:call)
        invalid("weight: a callable (a lambda of the job's arguments)", weight) unless callable
        [by, weight]
      end

      def called(name, callable, args)
        callable.call(*args)
      rescue => e
        raise ArgumentError, "sidekiq-limit_fetch: the fair #{name} of #{@class_name} raised #{e.class}: #{e.message}"
      end

      def invalid(expected, got)
        raise ArgumentError, "sidekiq-limit_fetch: #{@class_name}'s limit_fetch fair must be #{expected}, " \
                             "got #{got.inspect}"
      end
    end
  end
end
