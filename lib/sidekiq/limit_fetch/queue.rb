# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # One queue's limits, slots, backlog and pause, read and changed from any
    # process (a console, a deploy task, the Web UI, the CLI) with no
    # capsule: it registers nothing and starts no thread. A change holds in
    # every process at their next fetch; a pause ended wakes their idle
    # fetchers at once.
    #
    #   queue = Sidekiq::LimitFetch.queue("webhooks")
    #   queue.limit = 5
    #   queue.rate = {limit: 100, period: 60}   # 100 starts a minute
    #   queue.pause_for(600)
    #   queue.explain.to_s # => "paused until 12:04:10Z"
    class Queue
      include FairQueue

      attr_reader :name

      # +admin+: the NativeAdmin of the Redis to use (LimitFetch.admin).
      def initialize(name, admin: LimitFetch.admin)
        @name = name.to_s
        @admin = admin
      end

      # The global limit (all processes), as the fetch reads it (an adaptive
      # limit's limit in force); nil: none.
      def limit
        @admin.limit(name, :limit)
      end

      # An adaptive limit's {value:, floor:, ceiling:} (its limit in force
      # and its range, `limits: {queue: "1..20"}`); nil for a fixed limit.
      def adaptive
        state.adaptive
      end

      # An Integer from 0 (no new fetches) up, or nil to remove the limit.
      # Either replaces an adaptive limit's range (a process that starts
      # writes it again: it holds again only if the limit is its floor).
      def limit=(value)
        @admin.set_limit(name, :limit, Limits.coerce(name, value, :limit))
      end

      # The limit in each capsule (process), as the fetch reads it; nil: none.
      def process_limit
        @admin.limit(name, :process_limit)
      end

      def process_limit=(value)
        @admin.set_limit(name, :process_limit, Limits.coerce(name, value, :process_limit))
      end

      # The rate (a Rate: at most +limit+ starts in any +period+ seconds), as
      # the fetch reads it; nil: none.
      def rate
        @admin.rate(:queue, name)
      end

      # {limit:, period:}, "limit/period" or a Rate; nil removes it. The
      # queue's jobs over it stay queued, in order, until the window opens.
      def rate=(value)
        @admin.set_rate(:queue, name, value.nil? ? nil : Rates.coerce("rate for queue #{name.inspect}", value))
      end

      # The rate's window now (a RateWindow: +starts+ within the last period,
      # +next_start_in+ seconds), nil without a rate.
      def rate_window(state: self.state)
        @admin.rate_windows([[:queue, name, state.rate]]).first if state.rate
      end

      # Jobs of the queue running now, across every process. Sends this
      # process's pending acknowledgements first.
      def busy
        fresh_state.busy.values.sum
      end

      # {process identity => jobs of the queue it runs now}: the Sidekiq
      # identity ("host:pid:hex") of each process, the capsule's UUID for
      # a process that did not say (sidekiq-limit_fetch v5).
      def busy_by_process
        by_process(fresh_state.busy, capsules)
      end

      # Jobs waiting in Sidekiq's list of the queue.
      def queued
        state.queued
      end

      # No process fetches from the queue until #unpause; its limits stay
      # as they are, running jobs are untouched. Replaces a #pause_for.
      def pause
        @admin.pause(name, nil)
        nil
      end

      # As #pause, ending by itself after +seconds+ (a Redis TTL: it ends
      # even if no process is alive to end it).
      def pause_for(seconds)
        @admin.pause(name, Check.seconds(:pause_for, seconds))
        nil
      end

      # Ends a pause; idle fetchers in every process wake at once. True if
      # the queue was paused.
      def unpause
        @admin.unpause(name)
      end

      def paused?
        state.paused
      end

      # When a #pause_for ends (a Time); nil when paused until #unpause, or
      # not paused.
      def paused_until
        until_time(state)
      end

      # Why the queue's next job is or is not being fetched right now: an
      # Explanation (#reason, #to_s, #to_h). Sends this process's pending
      # acknowledgements first.
      def explain = explanation(fresh_state, capsules)

      # Everything above, as a plain Hash (for JSON and metrics): one round
      # trip, and one more for the capsules. A reader of many queues passes
      # their +state+ (a QueueState) and the +registered+ capsules
      # (RegisteredCapsule.all), each read once for all of them.
      def to_h(state: fresh_state, registered: capsules)
        window = rate_window(state: state)
        {
          name: name,
          **limits_h(state),
          busy: state.busy.values.sum,
          busy_by_process: by_process(state.busy, registered),
          queued: state.queued,
          paused: state.paused,
          paused_until: until_time(state),
          **rate_h(state, window),
          explain: explanation(state, registered, window).to_h
        }
      end

      # The queue as Redis holds it now (a QueueState).
      def state
        @admin.queue_states([name]).first
      end

      private

      def capsules
        RegisteredCapsule.all(@admin)
      end

      def explanation(state, registered, window = rate_window(state: state))
        Explanation.of(state, registered, window, tenants: tenants_with_work(state))
      end

      # After this process's pending acknowledgements reached Redis: a
      # reader that just finished jobs sees them finished.
      def fresh_state
        LimitFetch.flush_acknowledgements
        state
      end

      def by_process(busy, capsules)
        labels = capsules.to_h { |capsule| [capsule.uuid, capsule.label] }
        busy.each_with_object({}) do |(uuid, count), sums|
          label = labels.fetch(uuid, uuid)
          sums[label] = sums.fetch(label, 0) + count
        end
      end

      def limits_h(state) = state.to_h.slice(:limit, :adaptive, :process_limit).merge(fair_limit: state.fair)

      def rate_h(state, window)
        {rate: state.rate&.to_h, rate_window: window&.to_h}
      end

      def until_time(state)
        Time.now + state.pause_left if state.pause_left
      end
    end
  end
end
