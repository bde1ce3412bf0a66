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

      # ["queue name", "job"] or nil
      def fetch(queues)
        @native.fetch(queues)
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
    end
  end
end
