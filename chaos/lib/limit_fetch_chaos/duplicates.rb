# frozen_string_literal: true

module LimitFetchChaos
  # Jobs that ran more than once. Delivery is at least once, so a job may run
  # again only after a run the gem could not know finished: one in flight in
  # a process the chaos killed (unfinished, or finished within ACK_GRACE
  # before the kill, its acknowledgement not yet sent), the next run starting
  # after the kill; or one in flight while Redis restarted (within
  # MARGIN). Any other repeat is unexplained, and a failure.
  class Duplicates
    ACK_GRACE = 1_000_000_000
    MARGIN = 1_000_000_000

    attr_reader :by_kill, :by_restart, :unexplained

    # `killed`: worker name => when it was killed; `restart`: a Mayhem::Restart or nil.
    def initialize(runs, killed, restart)
      @killed = killed
      @restart = restart
      @by_kill = @by_restart = 0
      @unexplained = []
      runs.group_by(&:jid).each_value { |job_runs| classify(job_runs.sort_by(&:start)) if job_runs.size > 1 }
    end

    def jobs = by_kill + by_restart + unexplained.size

    private

    def classify(runs)
      reasons = runs.each_cons(2).map { |before, after| reason(before, after) }
      if reasons.all?
        reasons.include?(:kill) ? @by_kill += 1 : @by_restart += 1
      else
        @unexplained << {jid: runs.first.jid, runs: runs.map { describe(_1) }}
      end
    end

    def reason(before, after)
      return :kill if cut_by_kill?(before, after)

      :restart if @restart && before.overlaps?(@restart.down_from - MARGIN, @restart.down_until + MARGIN)
    end

    def cut_by_kill?(before, after)
      killed_at = @killed[before.worker] or return false
      after.start > killed_at && (!before.finished? || killed_at - before.finish <= ACK_GRACE)
    end

    def describe(run)
      state = run.finished? ? "finished" : "unfinished"
      state += ", its process killed" if @killed.key?(run.worker)
      "#{run.queue} in #{run.worker} from #{run.start} (#{state})"
    end
  end
end
