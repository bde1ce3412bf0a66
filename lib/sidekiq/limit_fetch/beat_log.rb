# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # Logs what a heartbeat did besides proving its capsule alive (a
    # BeatReport): capsules it reaped, parked jobs it sent back, and how it
    # brought this capsule's entries in Redis in line with the jobs it runs.
    class BeatLog
      include Sidekiq::Component

      # Why the census put format 1 back (log_format).
      SPEAKS_1 = "a capsule that does not speak format 2 is live (an older release, or v5)"

      # +options+: the capsule's CapsuleOptions.
      def initialize(capsule, options)
        @config = capsule
        @expiry = format("%g", options.heartbeat_period * 4)
        @max_recoveries = options.max_recoveries
      end

      def log(report)
        if report.released.positive?
          logger.info("sidekiq-limit_fetch: sent #{report.released} parked jobs back to their queues: their limits " \
                      "had room (raised outside Sidekiq::LimitFetch::JobLimit, or a default raised by a deploy)")
        end
        log_restored(report) if report.restored
        log_format(report.format_switched) if report.format_switched
        report.reaped.each { |reaped| log_reaped(reaped) }
        log_healed(report)
        log_finished(report)
        log_rebooked(report)
      end

      private

      # The census changed the fleet's data format (DataFormat): logged once,
      # by the capsule that took it.
      def log_format(format)
        why = format == 2 ? "every live capsule speaks it" : SPEAKS_1
        logger.info("sidekiq-limit_fetch: the fleet's data format is now #{format}: #{why} " \
                    "(`sidekiq-limits format` shows it)")
      end

      def log_restored(report)
        if report.lost_data
          logger.warn("sidekiq-limit_fetch: Redis had lost its data (a restart without persistence?): registered " \
                      "this capsule again and rewrote the configured limits that were missing")
        else
          logger.warn("sidekiq-limit_fetch: this capsule's heartbeat had expired: it could not beat for longer " \
                      "than #{@expiry}s (Redis down or unreachable, or this process frozen); registered again")
        end
      end

      # Reaped while it lived (or its fetches lost with a failover): its
      # running jobs went back to their queues, and may run elsewhere too
      # unless nobody had taken them yet.
      def log_rebooked(report)
        return if report.rebooked.empty?

        again, once = report.rebooked.partition { |job| !job.withdrawn }
        logger.warn("sidekiq-limit_fetch: Redis no longer counted jobs this capsule still runs (it was reaped as " \
                    "dead while frozen for longer than #{@expiry}s, or a failover lost their fetch): booked their " \
                    "slots again until they end; #{jobs(once)} taken out of their queues again (they run once), " \
                    "#{jobs(again)} may run a second time elsewhere")
      end

      def jobs(list)
        list.empty? ? "none" : list.map { |job| "#{job.jid} (#{job.queue})" }.join(", ")
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

      def log_finished(report)
        report.finished.each do |job|
          logger.info("sidekiq-limit_fetch: removed finished job #{job.jid} from this capsule's in-progress list " \
                      "of queue #{job.queue}: Redis had lost its acknowledgement (a failover or a restart)")
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
    end
  end
end
