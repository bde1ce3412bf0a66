# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    module Web
      # What the tab shows, read through the console API when the page is
      # built: the queues, the capsules waiting to be reaped, the job limits.
      class Overview
        # Keys shown per keyed scope, the busiest first.
        TOP_KEYS = 5
        # Auto-refresh periods offered, in seconds (?refresh= takes 1..60).
        REFRESH_CHOICES = [2, 5, 10].freeze
        REFRESH = 1..60

        # One queue's row: Queue#to_h (an adaptive limit's limit in force,
        # with +adaptive+; a fair queue's +fair_limit+), its +parked+ jobs
        # (ParkedCounts), and its Explanation's +reason+ and sentence
        # (+explanation+).
        QueueRow = Data.define(:name, :limit, :process_limit, :busy, :busy_by_process, :queued, :parked, :paused,
          :paused_until, :reason, :explanation, :rate, :rate_window, :adaptive, :fair_limit)

        # A job limit (JobLimitId +id+): the +limit+ in force, stored or else
        # the one its jobs carry (+default+: true; nil when no job tells it;
        # an adaptive one's limit in force, with +adaptive+: {value:, floor:,
        # ceiling:}), its +rate+ in force (a Rate, stored or carried; nil:
        # none or unknown) with its +rate_window+ (a RateWindow), and the
        # +back_off+ in force (a BackOffState, or nil); a fair class's tenant's
        # +fair+ share (a FairState), a fair class's +tenants+ with work (nil
        # for any other limit).
        JobLimitRow = Data.define(:id, :limit, :default, :running, :parked, :rate, :rate_window, :back_off,
          :adaptive, :fair, :tenants)

        # A keyed scope (a class, a group, a group in a queue) and its busiest keys.
        Scope = Data.define(:name, :keys, :running, :parked, :busiest)

        # A fair queue's slots (its JobLimitRow, +slots+) and its tenants'
        # rows (keys, or keyless jobs' classes), the busiest first.
        FairQueue = Data.define(:name, :slots, :tenants)

        # ?refresh=N as seconds, or nil (none, or not a whole number in REFRESH).
        def self.refresh(param)
          seconds = Integer(param, 10) if param.is_a?(String) && param.match?(/\A[0-9]{1,2}\z/)
          seconds if seconds && REFRESH.cover?(seconds)
        end

        attr_reader :error, :refresh

        def initialize(error: nil, refresh: nil)
          @error = error
          @refresh = refresh
        end

        # One read of every queue, one of the capsules, one of the parked
        # jobs, whatever the number of queues.
        def queues
          @queues ||= begin
            queues = LimitFetch.queues
            LimitFetch.flush_acknowledgements
            states = LimitFetch.admin.queue_states(queues.map(&:name))
            capsules = LimitFetch.capsules
            queues.zip(states).map { |queue, state| queue_row(queue.to_h(state: state, registered: capsules)) }
          end
        end

        # The parked jobs by queue (ParkedCounts).
        def parked
          @parked ||= ParkedCounts.read
        end

        # Registered capsules whose heartbeat expired: their process is gone
        # (or stalled) and a live capsule's reaper will free their slots.
        def expired_capsules
          @expired_capsules ||= LimitFetch.capsules.select(&:expired?)
        end

        # Class limits (class:Name) with running or parked jobs, by id.
        def class_limits
          job_limits.fetch(:class, [])
        end

        # Fair queues (`fair_limits:`) with running or parked jobs, by name.
        def fair_queues
          @fair_queues ||= job_limits.fetch(:queue, []).map { fair_queue(_1) }
        end

        # Keyed scopes with running or parked jobs, the busiest first.
        def scopes
          @scopes ||= begin
            by_scope = job_limits.fetch(:key, []).group_by { JobLimitId.scope(_1.id) }
            by_scope.map { |name, limits| scope(name, limits) }.sort_by { [-_1.running, -_1.parked, _1.name] }
          end
        end

        private

        def queue_row(state)
          explain = state[:explain]
          QueueRow.new(**state.slice(*QueueRow.members), parked: parked[state[:name]], reason: explain[:reason],
            explanation: explain[:message], rate: state[:rate] && Rate.new(**state[:rate]),
            rate_window: state[:rate_window] && RateWindow.new(**state[:rate_window]))
        end

        def fair_queue(slots)
          name = JobLimitId.queue(slots.id)
          tenants = job_limits.values.flatten.select { _1.fair&.queue == name }
          FairQueue.new(name: name, slots: slots, tenants: tenants.sort_by { [-_1.running, -_1.parked, _1.id] })
        end

        def scope(name, limits)
          busiest = limits.sort_by { [-_1.running, -_1.parked, _1.id] }.first(TOP_KEYS)
          Scope.new(name: name, keys: limits.size, running: limits.sum(&:running), parked: limits.sum(&:parked),
            busiest: busiest)
        end

        # Every active job limit's row, by kind; one read of their ids, one
        # of the fair classes' tenants, up to three of the jobs that carry
        # their limits, one of their states (a fair class's too, for its
        # limit in force), one of their rates' windows.
        def job_limits
          @job_limits ||= with_windows(job_limit_rows).group_by { JobLimitId.kind(_1.id) }
        end

        def job_limit_rows
          ids = LimitFetch.admin.active_job_limits.sort
          fair = FairShares.read
          states, carried = fair.read_states(ids)
          with_fair(states.map { job_limit_row(_1, carried[_1.id]) }, fair).first(ids.size)
        end

        # +rows+, a tenant's with its share, a fair class's with its tenants
        # with work.
        def with_fair(rows, fair)
          limits = rows.to_h { [_1.id, _1.limit] }
          rows.map do |row|
            row.with(fair: fair.state(row.id, limits[fair.class_of(row.id)]), tenants: fair.tenants_with_work(row.id))
          end
        end

        # From a JobLimitState and what its jobs carry (a CarriedLimits::
        # Carried, or nil).
        def job_limit_row(state, carried)
          rate = state.stored_rate || carried&.rate
          JobLimitRow.new(id: state.id, limit: JobLimit.in_force(state, carried&.default), default: state.stored.nil?,
            running: state.running, parked: state.parked, rate: rate, rate_window: nil, back_off: state.back_off,
            adaptive: JobLimit.adaptive_h(state, carried&.default), fair: nil, tenants: nil)
        end

        def with_windows(rows)
          rated = rows.select(&:rate)
          return rows if rated.empty?

          windows = LimitFetch.admin.rate_windows(rated.map { [:job_limit, _1.id, _1.rate] })
          by_id = rated.map(&:id).zip(windows).to_h
          rows.map { _1.rate ? _1.with(rate_window: by_id[_1.id]) : _1 }
        end
      end
    end
  end
end
