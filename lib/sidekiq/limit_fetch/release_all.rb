# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # The way out of the gem (LimitFetch.release_all, `sidekiq-limits
    # release --all`): every job it holds outside Sidekiq's queues, parked
    # behind a job limit or a rate, or in progress in a capsule that is not
    # alive, goes back to the front of its queue, each once, so that plain
    # Sidekiq processes run it. Refused while capsules are registered and
    # beating, unless forced: they would park jobs again.
    module ReleaseAll
      # Capsules live: a release now would race them; nothing was done.
      class LiveCapsules < Error
        # RegisteredCapsules, each with the seconds its heartbeat has left.
        attr_reader :capsules

        def initialize(capsules)
          @capsules = capsules
          super(ReleaseAll.refusal(capsules))
        end
      end

      # What a release did: +queues+, the jobs each queue got back at its
      # front ({name => {parked:, recovered:}}: parked behind a job limit or
      # a rate, and recovered from capsules that were not alive); +dead+,
      # the jobs sent to the dead set instead ({queue:, jid:, class:}: a job
      # recovered more than max_recoveries times, or parked naming no
      # queue); +capsules+, how many capsules that were not alive it reaped;
      # +outage_left+, the seconds the outage key has left when it stood (no
      # capsule was reaped then: run again once it is gone); +live+, the
      # live capsules a forced release left alone, with their jobs.
      Result = Data.define(:queues, :dead, :capsules, :outage_left, :live) do
        # Jobs back in their queues.
        def jobs = queues.each_value.sum { |moved| moved[:parked] + moved[:recovered] }

        def to_h
          super.merge(jobs: jobs, live: live.map { |capsule, left| capsule.to_h.merge(heartbeat_left: left) })
        end
      end

      module_function

      # Releases through +admin+ (a NativeAdmin): a Result, or LiveCapsules.
      def run(admin, force:, max_recoveries:)
        report = admin.release_all(force, max_recoveries)
        live = report.live.map { |entry| [RegisteredCapsule.from(entry), entry.heartbeat_left] }
        raise LiveCapsules, live if report.refused

        result(report, live)
      end

      # A Result from a ReleaseReport (shapes.rb).
      def result(report, live)
        Result.new(
          queues: report.queues.to_h { |name, parked, recovered| [name, {parked: parked, recovered: recovered}] },
          dead: report.dead.map { |queue, jid, job_class| {queue: queue, jid: jid, class: job_class} },
          capsules: report.capsules, outage_left: report.outage_left, live: live
        )
      end

      # The line of a refusal: how many live capsules, in which processes.
      def refusal(live)
        processes = live.group_by { |capsule, _| capsule.label }.map do |label, capsules|
          left = capsules.filter_map(&:last).max
          left ? "#{label} (heartbeat expires in #{left.ceil} s)" : label
        end
        "#{count(live.size, "live capsule", "live capsules")} (registered and beating) in " \
          "#{count(processes.size, "process", "processes")}: " \
          "#{processes.join(", ")}; stop them first (a process killed with kill -9 stays live until its heartbeat " \
          "expires), or force the release if they are being stopped anyway (--force; force: true)"
      end

      def count(number, one, many) = "#{number} #{number == 1 ? one : many}"
    end
  end
end
