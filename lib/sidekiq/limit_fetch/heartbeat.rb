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
        @max_recoveries = options.max_recoveries
        @wakeup = Thread::Queue.new
        @failing = false
        @lock = Mutex.new
        @broken_limits = BrokenLimits.new(capsule, native)
        @at_limit = AtLimitWarning.new(capsule, LimitFetch.admin(capsule), options.at_limit_warning_after)
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
          log_recovery if @failing
          @failing = false
          log(report)
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

      def log(report)
        if report.released.positive?
          logger.info("sidekiq-limit_fetch: sent #{report.released} parked jobs back to their queues: their limits " \
                      "had room (raised outside Sidekiq::LimitFetch::JobLimit, or a default raised by a deploy)")
        end
        if report.restored
          logger.warn("sidekiq-limit_fetch: Redis had lost this capsule's registration (restart without " \
                      "persistence?); registered again and rewrote the configured limits that were missing")
        end
        report.reaped.each { |reaped| log_reaped(reaped) }
        log_healed(report)
      end

      def log_healed(report)
        report.corrected.each do |busy|
          logger.warn("sidekiq-limit_fetch: corrected #{busy.key} for this capsule from #{busy.before} to " \
                      "#{busy.after} entries")
        end
        report.orphans.each do |orphan|
          logger.warn("sidekiq-limit_fetch: pushed job #{orphan.jid} back to queue #{orphan.queue}: it was in " \
                      "this capsule's in-progress list but no thread runs it (the reply of its fetch was lost)")
        end
      end

      def log_reaped(reaped)
        logger.info("sidekiq-limit_fetch: reaped #{reaped_capsule(reaped)}: freed #{reaped.freed} busy slots, " \
                    "pushed #{reaped.requeued} in-progress jobs back to their queues")
        reaped.dead.each do |job|
          logger.error("sidekiq-limit_fetch: job #{job.jid} (#{job.job_class}) of queue #{job.queue} was in " \
                       "progress in dead processes more than #{@max_recoveries} times: " \
                       "moved to the dead set as a poison pill")
        end
      end

      def reaped_capsule(reaped)
        return "dead capsule #{reaped.uuid}" unless reaped.unregistered

        "capsule #{reaped.uuid}, which held slots while neither registered nor beating"
      end

      def log_failure(error)
        if @failing
          logger.warn("sidekiq-limit_fetch heartbeat still failing: #{error.class}")
        else
          @failing = true
          logger.error("sidekiq-limit_fetch heartbeat failed: #{error.class}: #{error.message}")
        end
      end

      def log_recovery
        logger.info("sidekiq-limit_fetch heartbeat recovered: Redis is reachable again")
      end
    end
  end
end
