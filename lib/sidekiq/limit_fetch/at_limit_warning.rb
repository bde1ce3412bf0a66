# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # Warns once when a queue of the capsule has stayed at its global limit
    # with jobs waiting for :at_limit_warning_after seconds or more, and says
    # once when it left that state: one pair of lines per queue per episode in
    # each process serving the queue. Looked at on every heartbeat, so an
    # episode is seen up to one heartbeat period late (AtLimitClock).
    class AtLimitWarning
      include Sidekiq::Component

      # +admin+: the NativeAdmin of the capsule's Redis.
      def initialize(capsule, admin, after)
        @config = capsule
        @admin = admin
        @after = after
        @clock = AtLimitClock.new
        @warned = {} # queue => monotonic time its episode was first seen
      end

      def check(now = ::Process.clock_gettime(::Process::CLOCK_MONOTONIC))
        @admin.queue_states(config.queues.uniq).each { |state| check_one(state, now) }
      rescue LimitFetch::Error
        nil # the heartbeat reports Redis failures
      end

      private

      def check_one(state, now)
        name = state.name
        since = @clock.observe(name, AtLimitClock.at_limit?(state), now).since
        if since && now - since >= @after && !@warned.key?(name)
          @warned[name] = since
          warn_at_limit(state, now - since)
        elsif since.nil? && (started = @warned.delete(name))
          log_left(name, now - started)
        end
      end

      def log_left(name, seconds)
        logger.info("sidekiq-limit_fetch: queue #{name} is no longer at its global limit with jobs waiting, " \
                    "after #{seconds.round(1)} s")
      end

      def warn_at_limit(state, seconds)
        logger.warn("sidekiq-limit_fetch: queue #{state.name} has been at its global limit " \
                    "(#{state.busy.values.sum}/#{state.limit}) with #{state.queued} jobs waiting for " \
                    "#{seconds.round(1)} s (more than #{@after} s)")
      end
    end
  end
end
