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

        # One queue's row.
        QueueRow = Data.define(:name, :limit, :process_limit, :busy, :busy_by_process, :queued, :paused,
          :paused_until, :explanation)

        # A keyed scope (a class, a group, a group in a queue) and its busiest keys.
        Scope = Data.define(:name, :keys, :running, :parked, :busiest)

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

        def queues
          @queues ||= LimitFetch.queues.map { queue_row(_1) }
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

        # Keyed scopes with running or parked jobs, the busiest first.
        def scopes
          @scopes ||= begin
            by_scope = job_limits.fetch(:key, []).group_by { JobLimitId.scope(_1[:id]) }
            by_scope.map { |name, limits| scope(name, limits) }.sort_by { [-_1.running, -_1.parked, _1.name] }
          end
        end

        private

        # From Queue#to_h: one read of the queue, one of the capsules.
        def queue_row(queue)
          state = queue.to_h
          QueueRow.new(**state.slice(*QueueRow.members), explanation: state.dig(:explain, :message))
        end

        def scope(name, limits)
          busiest = limits.sort_by { [-_1[:running], -_1[:parked], _1[:id]] }.first(TOP_KEYS)
          Scope.new(name: name, keys: limits.size, running: limits.sum { _1[:running] },
            parked: limits.sum { _1[:parked] }, busiest: busiest)
        end

        def job_limits
          @job_limits ||= JobLimit.active_states.sort_by { _1[:id] }.group_by { JobLimitId.kind(_1[:id]) }
        end
      end
    end
  end
end
