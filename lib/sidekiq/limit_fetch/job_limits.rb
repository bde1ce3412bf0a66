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
    #   sidekiq_options limit_fetch: {rate: {limit: 100, period: 60}}   # 100 starts a minute
    #   sidekiq_options limit_fetch: {concurrency: 10, fair: ->(tenant_id, *) { tenant_id }}
    #
    # Options: concurrency (the class's limit, or a Range such as 1..20 for
    # an adaptive one, whose limit in force moves inside it as the jobs
    # back off, see BackOff; with key:, each key's default,
    # 1 if omitted unless a rate is given; or a callable of no arguments that returns it, called at
    # each push, so that a limit worked out at run time, such as
    # LimitedCapacity's max_running_jobs, holds from the next push on), key
    # (a callable given the job's arguments; nil from it means no key limit),
    # class_concurrency (with key:, a limit on the whole class too), group
    # (keys of every class with the same group share slots), per_queue (each
    # queue has its own slots of a key), on_limit (:park, the default, or
    # :discard), rate ({limit:, period:}: at most limit starts in any window
    # of period seconds, of the class, or with key:, of each key; a job over
    # it is parked until the window has room; with a rate, concurrency is
    # only what is given), back_off_on (errors from perform that back the
    # job's limit off, as a BackOff does: see BackOffMiddleware), fair (the
    # class's concurrency shared among the tenants with work, by weight: see
    # FairShare; its tenants are keys, and a rate is each tenant's).
    class JobLimits
      attr_reader :class_name

      def initialize(class_name, options)
        @class_name = class_name.to_s
        @check = DeclarationCheck.new(@class_name)
        options = @check.options(options)
        read_key(options)
        @rate = @check.rate(options[:rate]) if options.key?(:rate)
        read_concurrency(options)
        @on_limit = @check.on_limit(options.fetch(:on_limit, :park))
        @scope = @check.scope(options[:group] || @class_name)
        @per_queue = @check.per_queue(options.fetch(:per_queue, false))
      end

      # The limits a job pushed to +queue+ carries, as its payload holds them:
      # [{"id" =>, "concurrency" =>, "rate" => [limit, period], "discard" =>
      # true}, ...], concurrency and rate only where declared. The block gives
      # the job's arguments, asked for only by a key callable: getting an
      # ActiveJob job's arguments locates its records (a query each, and an
      # error for a deleted one), which a class limit has no use for.
      def payload(queue, &arguments)
        limits = class_limit? ? [class_entry] : []
        return limits unless keyed?

        own = @fair ? fair_entry(queue, arguments.call) : key_entry(queue, arguments.call)
        return limits unless own

        # A tenant's entry goes first: see fair_entry.
        @fair ? limits.unshift(own) : limits.push(own)
      end

      # The declaration of +job_class+ (a Sidekiq or ActiveJob class).
      def self.declared(job_class)
        options = job_class.respond_to?(:get_sidekiq_options) && job_class.get_sidekiq_options["limit_fetch"]
        raise ArgumentError, "sidekiq-limit_fetch: #{job_class} declares no limit_fetch option" unless options

        new(job_class, options)
      end

      # The id of +key+'s limit (+queue+ required for keys per queue).
      def key_id(key, queue = nil)
        @check.invalid(:key, "declared (key: or fair:) to look a key up", key) unless keyed?
        @check.invalid(:queue, "given: keys are per queue", queue) if @per_queue && queue.nil?
        JobLimitId.of_key(@scope, JobKey.checked(class_name, key), scope_queue(queue))
      end

      # The default of the limit +id+, nil if not this class's.
      def default_for(id)
        return @class_concurrency || concurrency if class_limit? && id == JobLimitId.of_class(class_name)

        concurrency if @key && JobLimitId.parse(id).kind == :key
      end

      # The class limit's id whose slots the tenant limit +id+ shares (fair:),
      # nil if none.
      def fair_class(id) = (JobLimitId.of_class(class_name) if @fair && JobLimitId.kind(id) == :key)

      # The declared rate (a Rate) of the limit +id+, nil if none.
      def rate_for(id)
        return unless @rate

        kind = JobLimitId.parse(id).kind
        @rate if keyed? ? kind == :key : id == JobLimitId.of_class(class_name)
      end

      private

      def class_limit? = !@back_off_only && (@key.nil? || @class_concurrency)

      def read_key(options)
        @key = options[:key]
        @fair = FairShare.new(@class_name, options[:fair]) if options.key?(:fair)
      end

      def class_entry
        entry(JobLimitId.of_class(class_name), @class_concurrency || concurrency, keyed? ? nil : @rate)
      end

      def key_entry(queue, args)
        key = key_of(args)
        entry(JobLimitId.of_key(@scope, key, scope_queue(queue)), concurrency, @rate) unless key.nil?
      end

      # Whether its jobs carry a key limit: key:'s, or fair:'s tenant.
      def keyed? = !!(@key || @fair)

      # A job's tenant entry, first: a job over its share is parked as its
      # tenant's, and that tenant's jobs go when its turn comes (the fetch's
      # fair.lua). Without a tenant, nil: the class's limit alone holds it.
      def fair_entry(queue, args)
        @fair.entry(args, JobLimitId.of_class(class_name), @rate) do |tenant|
          JobLimitId.of_key(@scope, tenant, scope_queue(queue))
        end
      end

      # back_off_on: alone limits nothing: the class backs off as a class
      # that declares no limit (BackOff). Checked here, at the first push.
      def back_off_only?(options)
        @check.back_off_on(options[:back_off_on])
        @back_off_only = options.keys == [:back_off_on]
      end

      # Without concurrency:, a key's limit is 1 unless a rate is given; a
      # class's must be given, or a rate. A callable's answer is checked at
      # each push.
      def read_concurrency(options)
        return if back_off_only?(options)

        concurrency = options.fetch(:concurrency) { default_concurrency }
        fixed = !concurrency.nil? && !concurrency.respond_to?(:call)
        @concurrency = fixed ? checked(:concurrency, concurrency) : concurrency
        class_concurrency = options[:class_concurrency]
        @class_concurrency = checked(:class_concurrency, class_concurrency) if class_concurrency
      end

      def default_concurrency
        @check.missing(:concurrency) unless (@rate && !@fair) || @key
        1 unless @rate
      end

      def checked(name, value) = @check.concurrency(name, value)

      # The concurrency: declared, or its callable's answer now (whose errors
      # are its own, raised as they are); nil for a rate without one.
      def concurrency
        @concurrency.respond_to?(:call) ? checked(:concurrency, @concurrency.call) : @concurrency
      end

      # The queue that is part of a key's scope: keys per queue only.
      def scope_queue(queue)
        @check.queue(queue) if @per_queue
      end

      def entry(id, concurrency, rate)
        entry = {"id" => id}
        # A range travels as its floor and ceiling: a process that knows no
        # ranges holds the floor.
        entry["concurrency"] = concurrency.is_a?(Range) ? concurrency.begin : concurrency unless concurrency.nil?
        entry["ceiling"] = concurrency.end if concurrency.is_a?(Range)
        entry["rate"] = [rate.limit, rate.period] if rate
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
    end
  end
end
