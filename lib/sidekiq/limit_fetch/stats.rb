# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # The figures of every queue and job limit as a plain Hash, for any
    # exporter (Metrics serves them to Prometheus), read through the console
    # API in six round trips, whatever the number of queues and keys:
    #
    #   {
    #     queues: [{queue: "webhooks", limit: 3, process_limit: nil, running: 3, queued: 12,
    #               paused: false, at_limit: true, at_limit_seconds: 41.5}, ...],
    #     job_limits: [{kind: :class, scope: "ExportJob", limit: 2, running: 1, parked: 0},
    #                  {kind: :key, scope: "SyncJob", limit: nil, running: 5, parked: 7}, ...]
    #   }
    #
    # Keyed limits are summed per scope (a class, or a group): one row per
    # scope whatever the number of keys. A limit is nil when none is stored
    # (no limit, or a default the jobs carry).
    class Stats
      def initialize(admin: LimitFetch.admin, clock: LimitFetch.at_limit_clock)
        @admin = admin
        @clock = clock
      end

      def to_h
        LimitFetch.flush_acknowledgements
        {queues: queues, job_limits: job_limits}
      end

      private

      def queues
        names = LimitFetch.queues.map(&:name)
        @admin.queue_states(names).map { |state| queue_row(state) }
      end

      def queue_row(state)
        at_limit = AtLimitClock.at_limit?(state)
        {
          queue: state.name, limit: state.limit, process_limit: state.process_limit,
          running: state.busy.values.sum, queued: state.queued, paused: state.paused,
          at_limit: at_limit, at_limit_seconds: @clock.observe(state.name, at_limit).seconds.round(3)
        }
      end

      def job_limits
        ids = JobLimit.active.map(&:id)
        rows = @admin.job_limits(ids).map { |state| job_limit_row(state) }
        rows.group_by { |row| row.values_at(:kind, :scope) }.values.map { |group| group.reduce { |a, b| sum(a, b) } }
      end

      # Keys of one scope, summed.
      def sum(row, other)
        row.merge(running: row[:running] + other[:running], parked: row[:parked] + other[:parked])
      end

      # From a JobLimitState. A key's stored limit is not shown: its scope's
      # row sums keys whose limits differ.
      def job_limit_row(state)
        parts = JobLimitId.parse(state.id)
        limit = state.stored if parts.kind == :class
        {kind: parts.kind, scope: parts.scope, limit: limit, running: state.running, parked: state.parked}
      end
    end

    @at_limit_clock = AtLimitClock.new

    class << self
      # This process's AtLimitClock.
      attr_reader :at_limit_clock

      # Every queue's and job limit's figures (Stats#to_h).
      def stats
        Stats.new.to_h
      end
    end
  end
end
