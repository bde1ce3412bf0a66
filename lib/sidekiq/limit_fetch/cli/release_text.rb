# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    class CLI
      # What `release --all` did (a ReleaseAll::Result), for a person: the
      # jobs each queue got back, the capsules reaped, what went to the dead
      # set, and what was left (an outage key, live capsules when forced).
      class ReleaseText
        def initialize(result)
          @result = result
        end

        def to_s
          [moved, *queues, reaped, *dead, outage, live].compact.map { |line| "#{line}\n" }.join
        end

        private

        def moved
          return "nothing to release: no parked job, no job of a capsule that is not alive" if @result.jobs.zero?

          n = @result.jobs
          "released #{n} #{plural(n, "job")} to the front of #{plural(n, "its queue", "their queues")}:"
        end

        def queues
          @result.queues.map do |name, moved|
            parts = []
            parts << "#{moved[:parked]} parked" if moved[:parked].positive?
            parts << "#{moved[:recovered]} from capsules not alive" if moved[:recovered].positive?
            "  #{name}: #{parts.join(", ")}"
          end
        end

        def reaped
          n = @result.capsules
          "#{n} #{plural(n, "capsule")} that #{plural(n, "was", "were")} not alive reaped" if n.positive?
        end

        def dead
          @result.dead.map do |job|
            queue = job[:queue].empty? ? "naming no queue" : "of #{job[:queue]}, recovered too many times"
            "to the dead set: #{job[:class]} #{job[:jid]} (#{queue})"
          end
        end

        def outage
          left = @result.outage_left
          return unless left

          "capsules not alive left as they are: the outage key stands #{left.ceil} s more (a capsule that " \
            "looks dead may be alive); run release --all again after"
        end

        def live
          return if @result.live.empty?

          labels = @result.live.map { |capsule, _| capsule.label }.uniq
          "forced: the jobs of #{@result.live.size} live #{plural(@result.live.size, "capsule")} " \
            "(#{labels.join(", ")}) left to them; they go back as those processes stop"
        end

        def plural(count, one, many = "#{one}s") = count == 1 ? one : many
      end
    end
  end
end
