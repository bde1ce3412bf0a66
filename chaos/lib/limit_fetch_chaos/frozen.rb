# frozen_string_literal: true

module LimitFetchChaos
  # A freeze as it happened (Freezer): `worker` (its name) stopped
  # (SIGSTOP) `from` until woken (SIGCONT) `to` (wall-clock ns; nil while
  # frozen), holding `held` in its capsules' in-progress lists when it
  # stopped (read once it had; nil if Redis did not answer). `expiry`: a
  # heartbeat's, in seconds.
  #
  # What a freeze excuses, and only when longer than the expiry (#reaped?):
  # the others then cannot tell the frozen process from a dead one, reap its
  # capsule and run the jobs it held again, while it, once woken, runs them
  # on. So a job it held may run once more elsewhere (#explain: Duplicates'
  # frozen_reaped), even at the same time as its run there, but not before
  # the frozen capsule could be taken for dead (#reapable_from); and its
  # woken originals (#original?) are left out of the limits' counts.
  Frozen = Data.define(:worker, :from, :to, :held, :expiry) do
    def seconds = ((to || LimitFetchChaos.now_ns) - from) / 1e9

    def reaped? = !to.nil? && seconds > expiry

    # A run of a job the frozen process held when it stopped, in that
    # process, begun before it was woken, or within FETCH_LAG after (fetched
    # before the freeze, its thread stopped before the job's first line):
    # what it ran on once woken. A run it fetched again later is not.
    def original?(run) = reaped? && run.worker == worker && held&.include?(run.jid) && run.start < to + FETCH_LAG

    # Earliest the others could take its capsule for dead: its last beat
    # came a heartbeat period before the freeze (period: expiry / 4), or two
    # on a loaded machine, and its heartbeat then lasted its expiry.
    def reapable_from = from + ((expiry * 0.5) * 1e9).to_i

    # Two runs of a job it held when it stopped: one in it, one elsewhere;
    # or both in it, the later begun once it woke (its capsule reaped, the
    # job pushed back, and fetched again by the woken process itself).
    def involves?(one, other)
      return false unless held&.include?(one.jid)
      return true if [one, other].one? { _1.worker == worker }

      [one, other].all? { _1.worker == worker } && !to.nil? && other.start >= to
    end

    # Two runs elsewhere of a job it held when it stopped, the later begun
    # after it woke and was then killed (at `killed_at`): its capsule reaped,
    # the job pushed back and run (the first); the woken process booked it
    # again as one it holds, as its reconciliation does for a job its thread
    # has, and died before running it, which sent it back once more.
    # {category: frozen_reaped, evidence:} of such runs, else nil.
    def rebooked(one, other, killed_at)
      return unless rebooked?(one, other, killed_at)

      {category: :frozen_reaped, evidence: "#{frozen_for}; ran in #{one.worker} #{ms(one.start - from)} after the " \
                                           "freeze began; booked again by #{worker} once woken, which was killed " \
                                           "#{ms(killed_at - to)} after it woke; ran again in #{other.worker} " \
                                           "#{ms(other.start - killed_at)} after the kill"}
    end

    # {category:, evidence:} of two runs it #involves?: frozen_reaped, or
    # nil (unexplained) if the freeze was too short or the other run began
    # too early.
    def explain(one, other)
      original, again = one.worker == worker ? [one, other] : [other, one]
      evidence = evidence(original, again)
      return {category: nil, evidence: "#{evidence}, a freeze shorter than a heartbeat's expiry"} unless reaped?
      return {category: nil, evidence: "#{evidence}, before its heartbeat could have expired"} if too_early?(again)

      {category: :frozen_reaped, evidence: evidence}
    end

    def to_h = super.merge(seconds: seconds.round(3))

    private

    def too_early?(run) = run.start < reapable_from

    # Two runs of a job it held, neither in it, the first once it could be
    # taken for dead, the other once it was killed after it woke.
    def rebooked?(one, other, killed_at) = elsewhere?(one, other) && killed_at&.>=(to) && other.start >= killed_at

    def elsewhere?(one, other)
      held&.include?(one.jid) && [one, other].none? { _1.worker == worker } && reaped? && !too_early?(one)
    end

    def frozen_for = "in #{worker}'s in-progress list when it was frozen (SIGSTOP) for #{seconds.round(1)} s"

    def evidence(original, again)
      "#{frozen_for}, #{state(original)}; " \
        "ran again in #{again.worker} #{ms(again.start - from)} after the freeze began" \
        "#{" at the same time" if original.overlaps?(again.start, again.end_ns)}"
    end

    def state(run)
      return "fetched, not yet begun; begun #{ms(run.start - to)} after it woke" if run.start >= to

      return "#{ms(from - run.written)} after its end was written" if ended_before?(run)

      "#{ms(from - run.start)} into the run"
    end

    def ended_before?(run) = run.finished? && run.finish <= from

    def ms(nanos) = "#{(nanos / 1e6).round} ms"
  end
end
