# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # The figures of every queue and job limit as a plain Hash, for any
    # exporter (Metrics serves them to Prometheus), read through the console
    # API in a few round trips, whatever the number of queues and keys:
    #
    #   {
    #     queues: [{queue: "webhooks", limit: 3, process_limit: nil, running: 3, queued: 12,
    #               parked: 40, latency: 93.2, paused: false, at_limit: true, at_limit_seconds: 41.5,
    #               rate_limit: 100, rate_period: 60, rate_starts: 87}, ...],
    #     job_limits: [{kind: :class, scope: "ExportJob", limit: 2, running: 1, parked: 0,
    #                   rate_limit: nil, rate_period: nil, rate_starts: nil},
    #                  {kind: :key, scope: "SyncJob", limit: nil, running: 5, parked: 7,
    #                   rate_limit: 5, rate_period: 1, rate_starts: 12}, ...]
    #   }
    #
    # Keyed limits are summed per scope (a class, or a group): one row per
    # scope whatever the number of keys. A limit is nil when none is stored
    # (no limit, or a default the jobs carry). A rate's figures are nil
    # without one: its limit and period are those in force (stored, else
    # carried by the jobs; a scope's when all its keys agree), its starts
    # those in the current window (summed over a scope's keys). A queue's
    # +queued+ jobs are those in Sidekiq's list, its +parked+ ones those
    # parked at their job limits or rates for it (Waiting), its +latency+
    # the age in seconds of its oldest waiting job, parked ones included.
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
        states = @admin.queue_states(names)
        windows = windows(states.map { |state| [:queue, state.name, state.rate] })
        waiting = Waiting.read(names, oldest: true, admin: @admin)
        states.zip(windows).map { |state, window| queue_row(state, waiting[state.name], window) }
      end

      def queue_row(state, waiting, window)
        at_limit = AtLimitClock.at_limit?(state)
        {
          queue: state.name, limit: state.limit, process_limit: state.process_limit,
          running: state.busy.values.sum, queued: state.queued, **waiting_figures(waiting), paused: state.paused,
          at_limit: at_limit, at_limit_seconds: @clock.observe(state.name, at_limit).seconds.round(3),
          **rate_figures(state.rate, window)
        }
      end

      # A queue's parked jobs and latency, from its Waiting::QueueWaiting.
      def waiting_figures(waiting)
        {parked: waiting.parked, latency: waiting.latency.round(3)}
      end

      def job_limits
        rows = job_limit_rows(@admin.job_limits(JobLimit.active.map(&:id)))
        rows.group_by { _1.values_at(:kind, :scope) }.values.map { |group| group.reduce { |a, b| sum(a, b) } }
      end

      def job_limit_rows(states)
        rates = rates_in_force(states)
        windows = windows(states.zip(rates).map { |state, rate| [:job_limit, state.id, rate] })
        states.each_index.map { |i| job_limit_row(states[i], rates[i], windows[i]) }
      end

      # Each JobLimitState's rate: stored, else the one its jobs carry.
      def rates_in_force(states)
        carried = CarriedLimits.read(states.map(&:id))
        states.map { |state| state.stored_rate || carried[state.id]&.rate }
      end

      # The RateWindow of each [of, name, rate] (nil where rate is), in one
      # round trip.
      def windows(targets)
        rated = targets.select(&:last)
        found = rated.empty? ? [] : @admin.rate_windows(rated)
        by_target = rated.zip(found).to_h
        targets.map { by_target[_1] }
      end

      def rate_figures(rate, window)
        {rate_limit: rate&.limit, rate_period: rate&.period, rate_starts: window&.starts}
      end

      # Keys of one scope, summed; their rate's limit and period kept where
      # they agree.
      def sum(row, other)
        starts = [row[:rate_starts], other[:rate_starts]].compact
        same = row.values_at(:rate_limit, :rate_period) == other.values_at(:rate_limit, :rate_period)
        row.merge(running: row[:running] + other[:running], parked: row[:parked] + other[:parked],
          rate_starts: (starts.sum unless starts.empty?), rate_limit: (row[:rate_limit] if same),
          rate_period: (row[:rate_period] if same))
      end

      # From a JobLimitState and its rate in force. A key's stored limit is
      # not shown: its scope's row sums keys whose limits differ.
      def job_limit_row(state, rate, window)
        parts = JobLimitId.parse(state.id)
        limit = state.stored if parts.kind == :class
        {kind: parts.kind, scope: parts.scope, limit: limit, running: state.running, parked: state.parked,
         **rate_figures(rate, window)}
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
