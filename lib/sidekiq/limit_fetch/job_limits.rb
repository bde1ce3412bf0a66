# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # A job class's `sidekiq_options limit_fetch: {...}`, checked once, and
    # the limits each of its jobs carries in its payload, computed when it is
    # pushed (see ClientMiddleware): the fetch enforces them from the payload
    # alone, without loading the class.
    #
    #   sidekiq_options limit_fetch: {concurrency: 2}            # 2 of the class at once
    #   sidekiq_options limit_fetch: {key: ->(tenant_id, *) { tenant_id }, concurrency: 1}
    #
    # Options: concurrency (the class's limit; with key:, each key's default,
    # 1 if omitted; or a callable of no arguments that returns it, called at
    # each push, so that a limit worked out at run time, such as
    # LimitedCapacity's max_running_jobs, holds from the next push on), key
    # (a callable given the job's arguments; nil from it means no key limit),
    # class_concurrency (with key:, a limit on the whole class too), group
    # (keys of every class with the same group share slots), per_queue (each
    # queue has its own slots of a key), on_limit (:park, the default, or
    # :discard).
    class JobLimits
      OPTIONS = %i[concurrency key class_concurrency group per_queue on_limit].freeze
      ON_LIMIT = %i[park discard].freeze

      attr_reader :class_name

      def initialize(class_name, options)
        @class_name = class_name.to_s
        options = checked_hash(options)
        @key = options[:key]
        check_key_options(options)
        @concurrency = options.fetch(:concurrency) { @key ? 1 : missing(:concurrency) }
        # A callable's answer is checked at each push.
        @concurrency = limit(:concurrency, @concurrency) unless @concurrency.respond_to?(:call)
        @class_concurrency = limit(:class_concurrency, options[:class_concurrency]) if options[:class_concurrency]
        @on_limit = checked_on_limit(options.fetch(:on_limit, :park))
        read_key_scope(options)
      end

      # The limits a job pushed to +queue+ carries, as its payload holds them:
      # [{"id" =>, "concurrency" =>, "discard" => true}, ...]. The block gives
      # the job's arguments, asked for only by a key callable: getting an
      # ActiveJob job's arguments locates its records (a query each, and an
      # error for a deleted one), which a class limit has no use for.
      def payload(queue, &arguments)
        limits = []
        default = concurrency
        limits << entry(JobLimitId.of_class(class_name), @class_concurrency || default) if class_limit?
        if @key
          key = key_of(arguments.call)
          limits << entry(JobLimitId.of_key(@scope, key, scope_queue(queue)), default) unless key.nil?
        end
        limits
      end

      # The declaration of +job_class+ (a Sidekiq or ActiveJob class).
      def self.declared(job_class)
        options = job_class.respond_to?(:get_sidekiq_options) && job_class.get_sidekiq_options["limit_fetch"]
        raise ArgumentError, "sidekiq-limit_fetch: #{job_class} declares no limit_fetch option" unless options

        new(job_class, options)
      end

      # The id of +key+'s limit (+queue+ required for keys per queue).
      def key_id(key, queue = nil)
        invalid(:key, "declared to look a key up", key) unless @key
        invalid(:queue, "given: keys are per queue", queue) if @per_queue && queue.nil?
        JobLimitId.of_key(@scope, JobKey.checked(class_name, key), scope_queue(queue))
      end

      # The default of the limit +id+, nil if not this class's.
      def default_for(id)
        return @class_concurrency || concurrency if class_limit? && id == JobLimitId.of_class(class_name)

        concurrency if @key && JobLimitId.parse(id).kind == :key
      end

      private

      def class_limit? = @key.nil? || @class_concurrency

      # The concurrency: declared, or its callable's answer now (whose errors
      # are its own, raised as they are).
      def concurrency
        @concurrency.respond_to?(:call) ? limit(:concurrency, @concurrency.call) : @concurrency
      end

      # The queue that is part of a key's scope: keys per queue only.
      def scope_queue(queue)
        return unless @per_queue

        queue = queue.to_s
        queue.include?("#") ? invalid(:queue, "free of \"#\" for keys per queue", queue) : queue
      end

      def entry(id, concurrency)
        entry = {"id" => id, "concurrency" => concurrency}
        entry["discard"] = true if @on_limit == :discard
        entry
      end

      def key_of(args)
        key = begin
          @key.call(*args)
        rescue => e
          raise ArgumentError, "sidekiq-limit_fetch: the key of #{class_name} raised #{e.class}: #{e.message}"
        end
        JobKey.checked(class_name, key) unless key.nil?
      end

      def checked_hash(options)
        invalid("limit_fetch", "a Hash", options.class) unless options.is_a?(Hash)
        options = options.transform_keys(&:to_sym)
        unknown = options.keys - OPTIONS
        invalid("limit_fetch", "options among #{OPTIONS.inspect}", unknown) unless unknown.empty?
        options
      end

      def limit(name, value)
        return value if value.is_a?(Integer) && value.between?(0, Limits::MAX)

        invalid(name, "an Integer from 0 to #{Limits::MAX}", value)
      end

      def checked_on_limit(value)
        ON_LIMIT.include?(value) ? value : invalid(:on_limit, ON_LIMIT.map(&:inspect).join(" or "), value)
      end

      def read_key_scope(options)
        @scope = checked_scope(options[:group] || @class_name)
        @per_queue = checked_per_queue(options.fetch(:per_queue, false))
      end

      # "#" ends a scope in a key's id.
      def checked_scope(value)
        value = value.to_s if value.is_a?(Symbol)
        return value if value.is_a?(String) && !value.empty? && !value.include?("#")

        invalid(:group, "a non-empty String or Symbol without \"#\"", value)
      end

      def checked_per_queue(value)
        [true, false].include?(value) ? value : invalid(:per_queue, "true or false", value)
      end

      def check_key_options(options)
        invalid(:key, "a callable (a lambda of the job's arguments)", @key) if @key && !@key.respond_to?(:call)
        %i[class_concurrency group per_queue].each do |name|
          invalid(name, "used with key:", options[name]) if options.key?(name) && !@key
        end
      end

      def missing(name)
        invalid(name, "given (or key: with a default of 1)", nil)
      end

      def invalid(name, expected, got)
        raise ArgumentError, "sidekiq-limit_fetch: #{class_name}'s limit_fetch #{name} must be #{expected}, " \
                             "got #{got.inspect}"
      end
    end
  end
end
