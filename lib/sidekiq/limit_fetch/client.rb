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
        @rates = Rates.configured(capsule)
        @ranges = Limits.ranges(capsule)
        @fetch_options = Configuration.fetch_options
        options = Configuration.capsule_options
        @native = Native.new(RedisOptions.for(capsule), options)
        @heartbeat = Heartbeat.new(capsule, @native, options)
        @discards = Discards.new(capsule, to_death_handlers: Configuration.discards_to_death_handlers)
      end

      def uuid
        @native.uuid
      end

      def start
        Limits.unserved(config, @limits).each do |queue|
          logger.warn("sidekiq-limit_fetch: a limit is set for queue #{queue.inspect}, which no capsule processes")
        end
        describe
        # Before any write: a server or Redis user that cannot run the gem
        # is refused, with one line saying why.
        @native.check_server
        write_defaults
        @native.register
        @heartbeat.start
        self
      end

      # Deregisters only if Redis answered the last heartbeat: while it is
      # down, the capsule's heartbeat key expires and other processes reap it.
      def stop
        deliver_discards
        @heartbeat.stop
        return if @heartbeat.failing?

        @native.deregister(config.queues.uniq)
      rescue LimitFetch::Error => e
        logger.warn("sidekiq-limit_fetch: could not deregister capsule #{uuid}: #{e.message}")
      end

      # ["queue name", "job"] or nil, from bare queue names. With wait:, when
      # nothing is eligible, blocks up to :fetch_timeout for a job or a slot.
      # Jobs discarded at their limit since the last call go to the app's
      # handlers first (Discards). A command the Redis ACL denies is logged
      # once (AclDenial) and raised.
      def fetch(queues, wait: false)
        return delivered(@native.fetch(queues, 0.0, 0.0)) unless wait

        delivered(@native.fetch(queues, @fetch_options.fetch_timeout, @fetch_options.poll_pause))
      rescue CommandError => e
        AclDenial.report(e, logger)
        raise
      end

      # Sidekiq is quieting: fetches stop waiting, and the discards a
      # fetching thread left behind are told now.
      def quiet
        @native.quiet
        deliver_discards
      end

      # The discarded jobs no fetch has handed over yet (their fetching
      # thread walked away), to the app's handlers.
      def deliver_discards
        @discards.deliver(@native.take_discarded)
      end

      # Returns at once: the acknowledgement rides on the capsule's next fetch.
      def acknowledge(queue_name, job)
        @native.acknowledge(queue_name, job)
      end

      # Parks +job+ (a fetched job of +queue_name+ that ended) first in line
      # for the limit +request+ (a BackOffRequest) names, which backs off.
      # Never raises: a job Redis did not get parked goes back to its queue
      # with the capsule's next reconciliation.
      def back_off(queue_name, job, request)
        done = @native.back_off(queue_name, job, request)
        logger.info("sidekiq-limit_fetch: #{backer(request)} backs #{request.limit} off for #{done.ends_in.round(3)} s")
        done
      rescue => e
        AclDenial.report(e, logger) if e.is_a?(CommandError)
        logger.error("sidekiq-limit_fetch: #{backer(request)} could not back #{request.limit} off " \
                     "(#{e.message}); it goes back to its queue")
        nil
      end

      def requeue(units)
        @native.requeue(units.map { |unit| [unit.queue_name, unit.job] })
      end

      def beat
        @heartbeat.beat
      end

      private

      # The configured limits, rates and ranges, where Redis holds none.
      def write_defaults
        @native.set_default_limits(@limits)
        @native.set_default_rates(@rates)
        # After the limits: a range's floor is one of them.
        @native.set_default_ranges(@ranges)
      end

      def backer(request) = "#{request.who} #{request.jid}"

      # A fetch's reply, its discarded jobs (a third element, rare) told.
      def delivered(reply)
        return reply unless reply&.size == 3

        queue, job, discarded = reply
        @discards.deliver(discarded)
        [queue, job] if queue
      end

      # What the capsule says of itself (the console's), and the queues whose
      # busy lists its beats look in for slots of unregistered capsules.
      def describe
        @native.describe(RegisteredCapsule.describe(config, identity: identity, heartbeat_ttl: @native.heartbeat_ttl))
        @native.serve(config.queues.uniq)
      end
    end
  end
end
