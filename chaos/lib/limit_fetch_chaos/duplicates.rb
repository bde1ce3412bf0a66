# frozen_string_literal: true

module LimitFetchChaos
  # Jobs that ran more than once, and why each ran again. Delivery is at least
  # once: a job runs again when the process that ran it died before Redis had
  # its acknowledgement, and a reaper pushed it back. So a repeat is explained
  # only by a kill of the earlier run's process that found the job still in
  # one of that process's in-progress lists (read right after the kill:
  # Fleet#held_at_kill), the next run starting after the kill. By what the
  # earlier run had done by then (CATEGORIES):
  #
  # - killed_running: it had not ended;
  # - killed_unacknowledged: it had ended, its acknowledgement not yet in
  #   Redis (sent within 2 ms of the end, or with the thread's next fetch);
  # - killed_after_outage: the same, for a run whose acknowledgement fell due
  #   while Redis was down (it ended during the outage, or as it began): the
  #   acknowledgement went only once Redis was back and the process had
  #   reconnected (about a second), and the kill came first (a kill falls
  #   due during the outage, and comes as soon as it is over).
  #
  # And by a freeze (Frozen) longer than a heartbeat's expiry, which the
  # other processes cannot tell from a death: a job in the frozen process's
  # in-progress lists when it stopped may run again elsewhere, even while
  # the frozen process, once woken, runs it on, or once more if the woken
  # process, which booked it again, is killed before it runs it
  # (frozen_reaped), but not before the frozen capsule's heartbeat could
  # have expired (Frozen#reapable_from).
  #
  # Any other repeat is unexplained, and a failure: a job pushed back while
  # it ran, or twice, or a run lost track of.
  class Duplicates
    CATEGORIES = %i[killed_running killed_unacknowledged killed_after_outage frozen_reaped].freeze

    # Repeats (runs after the first) by category, and the jobs run more than
    # once: {jid:, runs: [description], repeats: [{category:, evidence:}]},
    # with category nil for a repeat unexplained.
    attr_reader :counts, :jobs

    # `killed`: worker name => when it was killed; `held`: worker name => the
    # jids its capsules held when it was killed (nil: unknown); `restart`: a
    # Mayhem::Restart or nil; `frozen`: a Frozen or nil.
    def initialize(runs, killed, held, restart, frozen: nil)
      @killed = killed
      @held = held
      @restart = restart
      @frozen = frozen
      @counts = CATEGORIES.to_h { [_1, 0] }
      @jobs = runs.group_by(&:jid).values.select { _1.size > 1 }.map { job(_1.sort_by(&:start)) }
    end

    def unexplained = jobs.reject { |job| job[:repeats].all? { _1[:category] } }

    # The failure, nil if none: how many ran again unexplained, and the first
    # few with their runs and why each ran again, in one line (a CI log may
    # keep no more).
    def unexplained_failure(shown: 3)
      return if unexplained.empty?

      told = unexplained.first(shown).map do |job|
        "#{job[:jid]} (#{job[:runs].join(", ")}: #{job[:repeats].map { Duplicates.why(_1) }.join("; ")})"
      end
      "#{unexplained.size} jobs ran more than once unexplained: #{told.join(" | ")}"
    end

    def self.why(repeat) = "#{repeat[:category] || "UNEXPLAINED"}: #{repeat[:evidence]}"

    private

    def job(runs)
      repeats = runs.each_cons(2).map { |before, after| repeat(before, after) }
      repeats.each { |repeat| @counts[repeat[:category]] += 1 if repeat[:category] }
      {jid: runs.first.jid, runs: runs.map { describe(_1) }, repeats: repeats}
    end

    # A pair that involves the frozen process may still be a kill's: a job
    # killed elsewhere before the freeze, which the frozen process then took.
    def repeat(before, after)
      rebooked = @frozen&.rebooked(before, after, @killed[@frozen.worker])
      return rebooked if rebooked
      return killed_repeat(before, after) unless @frozen&.involves?(before, after)

      frozen = @frozen.explain(before, after)
      return frozen if frozen[:category]

      killed = killed_repeat(before, after)
      killed[:category] ? killed : frozen
    end

    def killed_repeat(before, after)
      killed_at = @killed[before.worker]
      held = killed_at && @held[before.worker]
      unless held&.include?(before.jid) && after.start > killed_at
        return {category: nil, evidence: unexplained_evidence(before, after, killed_at, held)}
      end

      category, what = outcome(before, killed_at)
      again = "ran again in #{after.worker} #{ms(after.start - killed_at)} after the kill"
      {category: category, evidence: "in #{before.worker}'s in-progress list when it was killed, #{what}; #{again}"}
    end

    def outcome(run, killed_at)
      return [:killed_running, "#{ms(killed_at - run.start)} into the run"] unless run.finished?

      written = "#{ms(killed_at - run.written)} after its end was written"
      return [:killed_unacknowledged, written] unless ended_in_outage?(run)

      [:killed_after_outage, "#{written}; it ended #{ms(@restart.down_until - run.finish)} before Redis came " \
                             "back, its acknowledgement due while Redis was down"]
    end

    # Ended before Redis came back, its end written (and so its acknowledgement
    # due) after Redis went down.
    def ended_in_outage?(run)
      @restart && run.finish < @restart.down_until && run.written > @restart.down_from
    end

    def unexplained_evidence(before, after, killed_at, held)
      unless killed_at
        return "#{before.worker} was not killed#{"; the two ran at the same time" if after.start <= before.end_ns}"
      end

      return "what #{before.worker} held when killed is unknown (Redis did not answer)" unless held
      return "not in #{before.worker}'s in-progress lists when it was killed" unless held.include?(before.jid)

      "ran again in #{after.worker} #{ms(killed_at - after.start)} before #{before.worker} was killed"
    end

    def ms(nanos) = "#{(nanos / 1e6).round} ms"

    def describe(run)
      state = run.finished? ? "finished" : "unfinished"
      state += ", its process killed" if @killed.key?(run.worker)
      state += ", its process frozen" if @frozen&.worker == run.worker
      "#{run.queue} in #{run.worker} from #{run.start} (#{state})"
    end
  end
end
