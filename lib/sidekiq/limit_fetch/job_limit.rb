# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # One job limit, a class's or a key's, read and changed at run time from
    # any process (a console, a deploy task), with no capsule: a change holds
    # in every process at their next fetch, and parked jobs it makes room
    # for go back to their queues at once.
    #
    #   Sidekiq::LimitFetch::JobLimit.for(SyncJob, key: tenant.id).limit = 3 # premium tenant
    #   Sidekiq::LimitFetch::JobLimit.for(SyncJob, key: tenant.id).reset      # back to the default
    #   Sidekiq::LimitFetch::JobLimit.for(ExportJob).running
    #   Sidekiq::LimitFetch::JobLimit.active                                  # with running or parked jobs
    #
    # Also reached as Sidekiq::LimitFetch.job_limit(SyncJob, key: tenant.id)
    # and Sidekiq::LimitFetch.job_limits (the active ones).
    class JobLimit
      attr_reader :id

      class << self
        # The class limit of +job_class+, or with +key:+ that key's limit
        # (with +queue:+ for a class whose keys are per queue). The class's
        # `sidekiq_options limit_fetch:` gives its group and default.
        def for(job_class, key: nil, queue: nil)
          declaration = JobLimits.declared(job_class)
          id = key.nil? ? JobLimitId.of_class(job_class.to_s) : declaration.key_id(key, queue)
          new(id, default: declaration.default_for(id))
        end

        # Every job limit with running or parked jobs, by id.
        def active
          admin.active_job_limits.map { |id| new(id) }
        end

        # #to_h of every job limit with running or parked jobs, read in one
        # round trip (their limit is the stored one: the default travels in
        # the jobs).
        def active_states
          admin.job_limits(admin.active_job_limits).map { |state| state_h(state) }
        end

        # A JobLimitState as a Hash, its limit the stored one or +default+.
        def state_h(state, default = nil)
          {id: state.id, limit: state.stored || default, stored: state.stored, running: state.running,
           parked: state.parked}
        end

        def admin
          LimitFetch.admin
        end
      end

      # +default+: the limit when none is stored, if known (the jobs carry it).
      def initialize(id, default: nil)
        @id = id
        @default = default
      end

      # The limit the next fetch applies: the stored one, else the default.
      def limit
        stored || @default
      end

      # Stores +value+ (an Integer; 0 pauses) for every process.
      def limit=(value)
        JobLimit.admin.set_job_limit(id, Limits.coerce(id, value, :job_limit))
      end

      # Back to the jobs' default.
      def reset
        JobLimit.admin.set_job_limit(id, nil)
      end

      # The limit set at run time, or nil.
      def stored = state.stored

      # Jobs carrying it that run now, across every process.
      def running = state.running

      # Jobs set aside until it has room.
      def parked = state.parked

      def to_h
        JobLimit.state_h(state, @default)
      end

      private

      # Its JobLimitState now.
      def state
        JobLimit.admin.job_limits([id]).first
      end
    end
  end
end
