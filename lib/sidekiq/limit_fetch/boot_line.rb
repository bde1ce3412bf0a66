# frozen_string_literal: true

require "sidekiq/limit_fetch/boot_line/job_limit_text"

module Sidekiq
  class LimitFetch < BasicFetch
    # The one line a Sidekiq process logs at boot (:startup, once its
    # capsules are set up): the gem's version; the queues it serves with the
    # limits in force, as Redis holds them (the configured ones were written
    # where none was stored; a limit set at run time stays); and the job
    # limits it knows of:
    #
    #   sidekiq-limit_fetch 0.1.0: queues exports (limit 3, process limit 1), mailers (no limit),
    #   partner (adaptive limit 7 of 1..20), imports (fair limit 10);
    #   job limits: ExportJob 2, SyncJob 1 per key, Legacy::Job 4 (configured; class not loaded)
    #
    # The classes it knows are those loaded when the process boots whose
    # `sidekiq_options` declare `limit_fetch` (found among the loaded
    # classes; nothing is loaded for it), and those `:class_limits` names.
    # A Rails app that eager-loads (production) has loaded them all; one that
    # autoloads has loaded few: the others' limits hold all the same, from
    # their jobs' payloads, and are not listed.
    class BootLine
      FIELD = "limit_fetch"

      # Logs the line for +config+ (a Sidekiq::Config); a warning instead
      # when Redis cannot tell the limits.
      def self.log(config)
        config.logger.info(new(config).to_s)
      rescue LimitFetch::Error => e
        config.logger.warn("sidekiq-limit_fetch #{VERSION}: could not read the limits in force: #{e.message}")
      end

      # [[class name, its limit_fetch option], ...] of the loaded classes
      # that declare one, by name.
      def self.declared
        ObjectSpace.each_object(Class).filter_map { |klass| declaration(klass) }.sort_by(&:first)
      end

      def self.declaration(klass)
        name = klass.name
        return unless name && klass.respond_to?(:get_sidekiq_options)

        options = klass.get_sidekiq_options[FIELD]
        [name, options] if options
      rescue
        nil # a class whose name or options raise declares nothing we can read
      end

      def initialize(config, declared: BootLine.declared, admin: LimitFetch.admin(config))
        @config = config
        @declared = declared
        @admin = admin
      end

      def to_s
        "sidekiq-limit_fetch #{VERSION}: queues #{queues}; job limits: #{job_limits}"
      end

      private

      def queues
        names = @config.capsules.each_value.flat_map(&:queues).uniq
        @admin.queue_states(names).map { |state| "#{state.name} (#{queue_limits(state)})" }.join(", ")
      end

      def queue_limits(state)
        parts = [global_limit(state)].compact
        parts << "fair limit #{state.fair}" if state.fair
        parts << "process limit #{state.process_limit}" if state.process_limit
        parts << "no limit" if parts.empty?
        parts << "paused" if state.paused
        parts.join(", ")
      end

      # "limit 3", "adaptive limit 7 of 1..20", or nil.
      def global_limit(state)
        adaptive = state.adaptive
        return "adaptive limit #{adaptive[:value]} of #{adaptive[:floor]}..#{adaptive[:ceiling]}" if adaptive

        "limit #{state.limit}" if state.limit
      end

      def job_limits
        classes = (@declared.map(&:first) + configured.keys).uniq.sort
        return "none (no class loaded so far declares limit_fetch, none in :class_limits)" if classes.empty?

        stored = stored_class_limits(classes)
        declared = @declared.to_h
        classes.map { |name| JobLimitText.new(name, declared[name], stored[name]).to_s }.join(", ")
      end

      # {class name => its class limit stored in Redis, or nil}.
      def stored_class_limits(classes)
        limits = @admin.job_limits(classes.map { JobLimitId.of_class(_1) })
        classes.zip(limits).to_h { |name, state| [name, state.stored] }
      end

      # {class name => limit} of :class_limits, in every capsule.
      def configured
        limits = @config.capsules.each_value.flat_map { Limits.class_limits(_1) }
        limits.to_h { |limit| [limit.name.delete_prefix("class:"), limit.value] }
      end
    end
  end
end
