# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    module Api
      # Prepended to Sidekiq::Stats: +enqueued+, +queues+ and
      # +queue_summaries+ count the jobs parked at their job limits (or
      # behind their rates) in their queues (Waiting), one more round trip
      # each, unless :count_parked_as_waiting is false.
      module StatsWaiting
        # +enqueued+: every queue's list and every parked job.
        def fetch_stats_slow!
          stats = super
          stats[:enqueued] += Waiting.read.parked if Waiting.counted?
          stats
        end

        def queues
          lengths = super
          return lengths unless Waiting.counted?

          Waiting.read.queues.each { |row| lengths[row.name] = lengths.fetch(row.name, 0) + row.parked }
          lengths.sort_by { |_, size| -size }.to_h
        end

        def queue_summaries
          summaries = super
          return summaries unless Waiting.counted?

          waiting = Waiting.read(oldest: true)
          listed = summaries.to_h { [_1.name, _1] }
          parked = waiting.queues.map { |row| with_parked(listed.delete(row.name), row) }
          (listed.values + parked).sort_by { -_1.size }
        end

        private

        # A queue's summary with its +row+'s parked jobs (a queue with only
        # parked jobs has none in Sidekiq's).
        def with_parked(summary, row)
          if summary.nil?
            return Stats::QueueSummary.new(name: row.name, size: row.size, latency: row.latency, paused: false)
          end

          summary.with(size: summary.size + row.parked, latency: [summary.latency, row.latency].max)
        end
      end
    end
  end
end
