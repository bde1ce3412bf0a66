# frozen_string_literal: true

require "sidekiq/api"

module Sidekiq
  class LimitFetch < BasicFetch
    # The jobs waiting in queues, parked ones included: a job parked at a
    # full job limit, or behind a rate, goes back to its queue when the
    # limit has room, so it waits as much as a job in Sidekiq's list does.
    # Read in one round trip by the core (src/lua/waiting.lua), for
    # Sidekiq's API (see api.rb), LimitFetch.stats and the Web UI's tab.
    #
    # Cost: bounded by BUDGET, payloads read (each limit read counts 15
    # more). A limit whose parked jobs are more than what is left of it is
    # counted by its oldest job alone: all its jobs for that job's queue
    # (exact while a limit's jobs all go to one queue, as a class's and its
    # keys' usually do); once it is spent, the limits left are not read.
    # #estimated? says either happened. See docs/metrics.md.
    class Waiting
      # What one read may read: bounds the time it holds Redis (10 to 15 ms
      # at most; see docs/metrics.md).
      BUDGET = 10_000

      # One queue's waiting jobs: +queued+ in Sidekiq's list, +parked+ at
      # their limits; the oldest payload of each (Strings, nil when not
      # asked for or none).
      QueueWaiting = Data.define(:name, :queued, :parked, :oldest_queued, :oldest_parked) do
        # Every waiting job.
        def size = queued + parked

        # The oldest waiting job's age in seconds (0.0 when none), as
        # Sidekiq's Queue#latency reads one (its enqueued_at).
        def latency
          [oldest_queued, oldest_parked].compact.map { Waiting.age(_1) }.max || 0.0
        end
      end

      extend ApiUtils

      # True when Sidekiq's API counts parked jobs as waiting
      # (LimitFetch.configuration's :count_parked_as_waiting).
      def self.counted?(configuration = LimitFetch.configuration)
        Configuration.checked(configuration)
        value = configuration[:count_parked_as_waiting]
        return value if [true, false].include?(value)

        raise ArgumentError, "sidekiq-limit_fetch: :count_parked_as_waiting must be true or false, " \
                             "got #{value.class}"
      end

      # The waiting jobs of +names+ (none: of every queue with parked jobs),
      # with the oldest payloads when +oldest+, through +admin+ (by default
      # on the Redis Sidekiq's API reads: its client's, or within
      # Sidekiq::Client.via, or in Sidekiq::Web, the pool's).
      def self.read(names = [], oldest: false, admin: LimitFetch.admin)
        estimated, rows = admin.waiting(names.map(&:to_s), BUDGET, oldest)
        new(rows.map { QueueWaiting.new(*_1) }, estimated: estimated)
      end

      # One queue's waiting jobs (a QueueWaiting).
      def self.queue(name, oldest: false)
        read([name], oldest: oldest)[name.to_s]
      end

      # Seconds since the job of +payload+ was enqueued.
      def self.age(payload)
        calculate_latency(Sidekiq.load_json(payload))
      rescue JSON::ParserError
        0.0
      end

      def initialize(rows, estimated: false)
        @rows = rows.to_h { [_1.name, _1] }
        @estimated = estimated
      end

      # The QueueWaiting of queue +name+ (nothing waiting if it was not read).
      def [](name)
        @rows.fetch(name) { QueueWaiting.new(name, 0, 0, nil, nil) }
      end

      # Every queue read.
      def queues = @rows.values

      # Parked jobs of every queue read.
      def parked = queues.sum(&:parked)

      def estimated? = @estimated
    end
  end
end

require "sidekiq/limit_fetch/waiting/shared_read"
