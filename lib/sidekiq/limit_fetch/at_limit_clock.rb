# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # Time spent by queues at their global limit with jobs waiting, as seen
    # by this process's successive looks (LimitFetch.stats, the heartbeat):
    # the time between two looks that both found a queue so is counted. Kept
    # in memory, so it starts from 0 with the process (a Prometheus counter
    # reset, which rate() and increase() handle); its precision is the
    # interval between looks (a scrape, a heartbeat).
    class AtLimitClock
      # One queue's episode: since when it is at its limit (+since+, nil when
      # not), the +seconds+ counted in all, and when it was last looked at.
      Entry = Struct.new(:since, :seconds, :seen_at)

      def initialize
        @entries = {}
        @lock = Mutex.new
      end

      # Records a look at +queue+ at monotonic time +now+; returns its Entry
      # (a copy).
      def observe(queue, at_limit, now = ::Process.clock_gettime(::Process::CLOCK_MONOTONIC))
        @lock.synchronize do
          entry = @entries[queue] ||= Entry.new(nil, 0.0, now)
          entry.seconds += now - entry.seen_at if at_limit && entry.since
          entry.since = at_limit ? entry.since || now : nil
          entry.seen_at = now
          entry.dup
        end
      end

      # Whether a QueueState shows a queue at its global limit with jobs
      # waiting (a paused queue is not: it waits for a person).
      def self.at_limit?(state)
        !state.paused && !state.limit.nil? && state.queued.positive? && state.busy.values.sum >= state.limit
      end
    end
  end
end
