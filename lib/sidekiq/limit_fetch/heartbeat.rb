# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # A Ruby thread (so that it may log) that proves a capsule alive every
    # heartbeat period, heals its busy lists, reaps dead capsules and warns
    # about limits in Redis that are not numbers and about queues that stay
    # at their limit with jobs waiting. The Redis work runs in the
    # core without the GVL.
    class Heartbeat
      include Sidekiq::Component

      # +options+: the capsule's CapsuleOptions.
      def initialize(capsule, native, options)
        @config = capsule
        @native = native
        @period = options.heartbeat_period
        @wakeup = Thread::Queue.new
        @failing = false
        @lock = Mutex.new
        @beat_log = BeatLog.new(capsule, options)
        # What reads without beating (the capsule's own work, in +native+):
        # the administration of the capsule's Redis.
        admin = LimitFetch.admin(capsule)
        @broken_limits = BrokenLimits.new(capsule, admin)
        @at_limit = AtLimitWarning.new(capsule, admin, options.at_limit_warning_after)
      end

      def start
        @thread ||= Thread.new do
          Thread.current.name = "sidekiq-limit_fetch.heartbeat"
          Thread.current.report_on_exception = false
          run
        end
        self
      end

      def stop
        @wakeup << :stop
        @thread&.join(5)
      end

      # True while the last beat failed: Redis is then considered down.
      def failing?
        @failing
      end

      # One beat at a time (the thread's, or a caller's), so that a broken
      # limit is warned about once.
      def beat
        @lock.synchronize do
          report = @native.beat
          log_recovery(report) if @failing
          @failing = false
          @beat_log.log(report)
          @broken_limits.check
          @at_limit.check
        end
      rescue LimitFetch::Error => e
        log_failure(e)
      end

      private

      # Beats at once (a process starting up reaps what dead ones left),
      # then every period.
      def run
        loop do
          beat
          break if @wakeup.pop(timeout: @period) == :stop
        end
      rescue => e
        # Never let the heartbeat die silently: a dead heartbeat means reaping.
        handle_exception(e, {context: "sidekiq-limit_fetch heartbeat"})
        retry
      end

      def log_failure(error)
        if @failing
          logger.warn("sidekiq-limit_fetch heartbeat still failing: #{error.class}")
        else
          @failing = true
          logger.error("sidekiq-limit_fetch heartbeat failed: #{error.class}: #{error.message}")
        end
      end

      def log_recovery(report)
        if report.held_off
          held = " (no capsule is reaped for #{format("%g", @period * 4)}s: others may not have beaten again yet)"
        end
        logger.info("sidekiq-limit_fetch heartbeat recovered: Redis is reachable again#{held}")
      end
    end
  end
end
