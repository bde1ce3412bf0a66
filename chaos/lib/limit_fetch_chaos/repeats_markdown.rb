# frozen_string_literal: true

module LimitFetchChaos
  # The jobs run more than once (Duplicates, as Report#to_h gives them) in
  # the Markdown report: a count by category, and a table of the jobs with
  # why each ran again.
  module RepeatsMarkdown
    SHOWN = 30

    module_function

    def summary(jobs)
      counts = jobs[:repeats]
      "#{jobs[:runs]}; #{jobs[:run_more_than_once]} (runs again after a kill: #{counts[:killed_running]} cut " \
        "short, #{counts[:killed_unacknowledged]} not yet acknowledged, #{counts[:killed_after_outage]} not yet " \
        "acknowledged as it ended during the Redis outage; #{counts[:frozen_reaped]} while their frozen process " \
        "held them; unexplained #{jobs[:repeated_unexplained].size})"
    end

    # SHOWN jobs at most, then how many more the JSON report lists.
    def table(jobs)
      return [] if jobs.empty?

      rows = jobs.first(SHOWN).map do |job|
        why = job[:repeats].map { Duplicates.why(_1) }.join("; ")
        [job[:jid], job[:runs].size, why]
      end
      more = jobs.size > SHOWN ? ["", "#{jobs.size - SHOWN} more in the JSON report (results/latest.json)."] : []
      [*Markdown.table(["job run more than once", "runs", "why it ran again"], rows), *more, ""]
    end
  end
end
