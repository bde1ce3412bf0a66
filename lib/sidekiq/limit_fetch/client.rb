# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # Everything one capsule needs: its native core handle (UUID, Redis
    # connection, slot bookkeeping) and its heartbeat.
    class Client
      include Sidekiq::Component

      attr_reader :native

      def initialize(capsule)
        @config = capsule
        @limits = Limits.configured(capsule)
        @fetch_timeout = fetch_timeout
        @poll_range = poll_range
        period = LimitFetch.configuration[:heartbeat_period]
        @native = Native.new(RedisOptions.for(capsule), period.to_f, max_recoveries)
        @heartbeat = Heartbeat.new(capsule, @native, period.to_f)
      end

      def uuid
        @native.uuid
      end

      def start
        Limits.unserved(config, @limits).each do |queue|
          logger.warn("sidekiq-limit_fetch: a limit is set for queue #{queue.inspect}, which no capsule processes")
        end
        @native.set_default_limits(@limits)
        @native.register
        @heartbeat.start
        self
      end

      # Deregisters only if Redis answered the last heartbeat: while it is
      # down, the capsule's heartbeat key expires and other processes reap it.
      def stop
        @heartbeat.stop
        return if @heartbeat.failing?

        @native.deregister(config.queues.uniq)
      rescue LimitFetch::Error => e
        logger.warn("sidekiq-limit_fetch: could not deregister capsule #{uuid}: #{e.message}")
      end

      # ["queue name", "job"] or nil. With wait:, when nothing is eligible,
      # blocks up to :fetch_timeout for a job or a slot.
      def fetch(queues, wait: false)
        return @native.fetch(queues, 0.0, 0.0) unless wait

        @native.fetch(queues, @fetch_timeout, rand(@poll_range).to_f)
      end

      def quiet
        @native.quiet
      end

      # Returns at once: the acknowledgement rides on the capsule's next fetch.
      def acknowledge(queue_name, job)
        @native.acknowledge(queue_name, job)
      end

      def requeue(units)
        @native.requeue(units.map { |unit| [unit.queue_name, unit.job] })
      end

      def beat
        @heartbeat.beat
      end

      private

      def max_recoveries
        value = LimitFetch.configuration[:max_recoveries]
        return value if value.is_a?(Integer) && value >= 0

        raise ArgumentError, "sidekiq-limit_fetch: max_recoveries must be a non-negative Integer, got #{value.inspect}"
      end

      def fetch_timeout
        value = LimitFetch.configuration[:fetch_timeout]
        return value.to_f if value.is_a?(Numeric) && value.positive? && value.finite?

        raise ArgumentError, "sidekiq-limit_fetch: fetch_timeout must be a positive number of seconds, " \
                             "got #{value.inspect}"
      end

      # A zero pause would make idle fetches loop on Redis where it refuses
      # CLIENT TRACKING.
      def poll_range
        value = LimitFetch.configuration[:poll_range]
        return value if value.is_a?(Range) && positive?(value.begin) && positive?(value.end) &&
                        value.begin <= value.end

        raise ArgumentError, "sidekiq-limit_fetch: poll_range must be a Range of positive seconds, " \
                             "got #{value.inspect}"
      end

      def positive?(seconds)
        seconds.is_a?(Numeric) && seconds.positive?
      end
    end
  end
end
