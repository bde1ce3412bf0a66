# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # A Queue's fair share (`fair_limits: {imports: 10}` in sidekiq.yml):
    # its slots, the job limit JobLimitId.of_queue(name), shared among the
    # tenants of its jobs (see docs/fair-share.md).
    #
    #   queue = Sidekiq::LimitFetch.queue("imports")
    #   queue.fair_limit   # => 10
    #   queue.fair_tenants.map(&:to_s)
    #   # => ["tenant acme: 4 of its fair 3.3 of 10, 3 tenants with work", ...]
    module FairQueue
      # A fair queue's limit: its slots; nil for a queue that is not fair.
      def fair_limit
        state.fair
      end

      # An Integer from 0 up; nil: the queue is no longer fair (its jobs
      # already fetched once keep their share until they run).
      def fair_limit=(value)
        @admin.set_job_limit(JobLimitId.of_queue(name), Limits.coerce(name, value, :fair_limit))
      end

      # Its tenants with work (running or parked jobs), each a FairState,
      # the busiest first; [] for a queue that is not fair.
      def fair_tenants(state: fresh_state)
        return [] unless state.fair

        tenants = @admin.fair_tenants(JobLimitId.of_queue(name))
        tenants.sort_by { [-_1.running, _1.id] }.map { FairState.new(_1.id, tenants, state.fair) }
      end

      private

      # How many tenants of a fair queue have work (nil if it is not fair).
      def tenants_with_work(state)
        @admin.fair_tenants(JobLimitId.of_queue(name)).size if state.fair
      end
    end
  end
end
