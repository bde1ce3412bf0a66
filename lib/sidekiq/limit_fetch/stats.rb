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
    #                   rate_limit: nil, rate_period: nil, rate_starts: nil,
    #                   back_off_seconds_left: 0.0, backing_off: 0, back_offs: 0},
    #                  {kind: :key, scope: "SyncJob", limit: nil, running: 5, parked: 7,
    #                   rate_limit: 5, rate_period: 1, rate_starts: 12,
    #                   back_off_seconds_left: 12.3, backing_off: 2, back_offs: 31}, ...],
    #     fair_classes: [{class: "SyncJob", limit: 10, tenants_with_work: 3},
    #                    {queue: "imports", limit: 10, tenants_with_work: 2}, ...],
    #     fair_tenants: [{class: "SyncJob", scope: "SyncJob", key: "acme", running: 4, share: 3.333},
    #                    {queue: "imports", scope: nil, key: "PlainJob", running: 1, share: 5.0}, ...]
    #   }
    #
    # A queue's limit is the one in force (an adaptive one's moves inside
    # its range; a fair queue's is its fair limit).
    # Keyed limits are summed per scope (a class, or a group): one row per
    # scope whatever the number of keys. A limit is nil when none is stored
    # (no limit, or a default the jobs carry), but an adaptive class limit's
    # is its limit in force. A back-off's figures: the seconds the longest
    # one in force has left (0.0: none), how many limits back off now (a
    # scope's keys), and the back-offs counted since Redis holds the count
    # (a scope's active keys', summed). A rate's figures are nil
    # without one: its limit and period are those in force (stored, else
    # carried by the jobs; a scope's when all its keys agree), its starts
    # those in the current window (summed over a scope's keys). A queue's
    # +queued+ jobs are those in Sidekiq's list, its +parked+ ones those
    # parked at their job limits or rates for it (Waiting), its +latency+
    # the age in seconds of its oldest waiting job, parked ones included.
    # A fair class's tenants with work are counted, and each tenant's
    # running jobs and share of its class's limit in force are given one
    # row per tenant (FairFigures: a fair queue's rows name it by +queue+).
    # A fair queue's slots are a job limit of kind :queue.
    class Stats
      def initialize(admin: LimitFetch.admin, clock: LimitFetch.at_limit_clock)
        @admin = admin
        @clock = clock
      end

      def to_h
        LimitFetch.flush_acknowledgements
        queues = self.queues
        job_limits = self.job_limits # and the fair classes' figures, read with them
        {queues: queues, job_limits: job_limits, fair_classes: @fair_classes, fair_tenants: @fair_tenants}
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
          queue: state.name, **limit_figures(state), running: state.busy.values.sum, queued: state.queued,
          **waiting_figures(waiting), paused: state.paused,
          at_limit: at_limit, at_limit_seconds: @clock.observe(state.name, at_limit).seconds.round(3),
          **rate_figures(state.rate, window)
        }
      end

      # A queue's limits: a fair queue's fair limit caps it too.
      def limit_figures(state)
        {limit: [state.limit, state.fair].compact.min, process_limit: state.process_limit}
      end

      # A queue's parked jobs and latency, from its Waiting::QueueWaiting.
      def waiting_figures(waiting)
        {parked: waiting.parked, latency: waiting.latency.round(3)}
      end

      # The active job limits' rows, keys summed per scope; the fair
      # classes' read with them (a fair class's state too, for its limit in
      # force, though none of its own jobs run).
      def job_limits
        ids = JobLimit.active.map(&:id)
        fair = FairShares.new(@admin.fair_classes)
        states, carried = fair.read_states(ids, @admin)
        fair_figures(fair, states, carried)
        per_scope(job_limit_rows(states.first(ids.size), @admin.back_off_counts(ids), carried))
      end

      # Rows of keys of one scope summed into one.
      def per_scope(rows)
        rows.group_by { _1.values_at(:kind, :scope) }.values.map { |group| group.reduce { |a, b| sum(a, b) } }
      end

      # The fair classes' rows (FairFigures), under their limits in force
      # (of +states+, whose jobs carry +carried+).
      def fair_figures(fair, states, carried)
        figures = FairFigures.new(fair, states.to_h { [_1.id, JobLimit.in_force(_1, carried[_1.id]&.default)] })
        @fair_classes = figures.classes
        @fair_tenants = figures.tenants
      end

      def job_limit_rows(states, back_offs, carried)
        rates = rates_in_force(states, carried)
        windows = rate_windows(states, rates)
        states.each_with_index.map do |state, i|
          job_limit_row(state, carried[state.id]).merge(rate_figures(rates[i], windows[i]),
            back_off_figures(state, back_offs[i]))
        end
      end

      # The RateWindow of each JobLimitState whose rate (of +rates+) is not nil.
      def rate_windows(states, rates)
        windows(states.zip(rates).map { |state, rate| [:job_limit, state.id, rate] })
      end

      # Each JobLimitState's rate: stored, else the one its jobs carry
      # (+carried+, by id).
      def rates_in_force(states, carried)
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

      # A back-off's figures of a JobLimitState backed off +count+ times.
      def back_off_figures(state, count)
        left = state.back_off&.left
        {back_off_seconds_left: (left || 0.0).round(3), backing_off: left ? 1 : 0, back_offs: count}
      end

      # Keys of one scope, summed; their rate's limit and period kept where
      # they agree, the longest back-off's seconds left.
      def sum(row, other)
        row.merge(running: row[:running] + other[:running], parked: row[:parked] + other[:parked],
          **summed_rates(row, other), **summed_back_offs(row, other))
      end

      def summed_rates(row, other)
        starts = [row[:rate_starts], other[:rate_starts]].compact
        same = row.values_at(:rate_limit, :rate_period) == other.values_at(:rate_limit, :rate_period)
        {rate_starts: (starts.sum unless starts.empty?), rate_limit: (row[:rate_limit] if same),
         rate_period: (row[:rate_period] if same)}
      end

      def summed_back_offs(row, other)
        {back_off_seconds_left: [row[:back_off_seconds_left], other[:back_off_seconds_left]].max,
         backing_off: row[:backing_off] + other[:backing_off], back_offs: row[:back_offs] + other[:back_offs]}
      end

      # From a JobLimitState and what its jobs carry (a CarriedLimits::
      # Carried, or nil). A key's stored limit is not shown: its scope's row
      # sums keys whose limits differ. A class's adaptive limit shows its
      # limit in force. A fair queue's slots (kind :queue, scoped by the
      # queue's name) show its fair limit.
      def job_limit_row(state, carried)
        parts = JobLimitId.parse(state.id)
        limit = state.stored || (JobLimit.in_force(state, carried.default) if carried&.ceiling)
        {kind: parts.kind, scope: parts.scope, limit: (limit unless parts.kind == :key), running: state.running,
         parked: state.parked}
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
