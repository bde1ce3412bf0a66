# frozen_string_literal: true

module LimitFetchChaos
  # A report (Report#to_h) as short Markdown: what bin/chaos prints at the end
  # and writes to results/latest.md.
  module Markdown
    REPEATED_SHOWN = 30

    module_function

    def render(report)
      ["# bin/chaos: #{report[:passed] ? "passed" : "FAILED"}", "", environment(report[:environment]), "",
       setup(report[:plan]), "", *table(["", ""], facts(report)), "",
       *table(["queue", "most at once / limit", "most in one process / limit"], concurrency(report)), "",
       *table(["job limit", "queues", "most at once / limit", "most in one process"], job_limits(report)), "",
       *repeated(report[:jobs][:repeated_jobs]), *verdict(report[:failures])].join("\n") << "\n"
    end

    def table(header, rows)
      [header, header.map { "---" }, *rows].map { |cells| "| #{cells.join(" | ")} |" }
    end

    def verdict(failures) = failures.empty? ? ["No failures."] : failures.map { "- FAILED: #{_1}" }

    def environment(env)
      "#{env[:date]}; #{env[:cpus]} CPUs (#{env[:cpu]}), Linux #{env[:kernel]}; Ruby #{env[:ruby]}, " \
        "Sidekiq #{env[:sidekiq]}, #{env[:redis]}; commit #{env[:commit]}"
    end

    def setup(plan)
      "#{plan[:processes]} Sidekiq processes x #{plan[:concurrency]} threads; #{jobs(plan)} of " \
        "#{plan[:job_ms].join("-")} ms on queues #{plan[:queues].join(", ")}; a kill -9 every " \
        "#{plan[:kill_every_s].join("-")} s; heartbeat period #{plan[:heartbeat_period]} s; " \
        "Redis `#{plan[:redis]}`; seed #{plan[:seed]}."
    end

    def jobs(plan)
      [("#{plan[:jobs]} jobs" if plan[:jobs]), ("jobs pushed for #{plan[:duration]} s" if plan[:duration])]
        .compact.join(" or ")
    end

    def facts(report)
      jobs = report[:jobs]
      [["jobs enqueued / completed / discarded / lost",
        "#{jobs[:enqueued]} / #{jobs[:completed]} / #{jobs[:discarded]} / #{jobs[:lost]}"],
       ["runs; jobs run more than once", repeats(jobs)], *limited(report), *chaos(report[:chaos]),
       ["time until every job completed; throughput",
        "#{report[:timing][:seconds]} s; #{report[:timing][:jobs_per_second]} jobs/s"],
       ["left in Redis after the processes stopped", leftovers(report[:redis_after_stop])]]
    end

    def limited(report)
      limited = report[:limited]
      [*limited[:classes].map { |name, seen| ["#{name}'s jobs", limited_class(seen)] },
       ["jobs parked at their job limits", parked(limited)], ["discarded (DiscardChaosJob)", discards(limited)],
       ["most of a PerQueueChaosJob tenant at once across p and q (1 per queue)",
        limited[:per_queue_most].map { _1.join(" ") }.join(", ")],
       ["#{report[:tuner][:id]} changed at run time", tuned(report)]]
    end

    def limited_class(seen)
      "#{seen[:enqueued]} enqueued / #{seen[:completed]} completed / #{seen[:discarded]} discarded / " \
        "#{seen[:lost]} lost; #{seen[:carried]} pushes carried their job limits, #{seen[:not_carried]} did not"
    end

    def parked(limited)
      by_queue = limited[:ticks_parked_by_queue].map { _1.join(" ") }.join(", ")
      "at most #{limited[:parked_most]} at once; some in #{limited[:ticks_parked]} of #{limited[:ticks]} feeder " \
        "ticks (by queue: #{by_queue})"
    end

    def discards(limited)
      discards = limited[:discards]
      "#{discards[:jobs]} jobs: #{discards[:counted].fetch(Discards::NAME, 0)} counted in Redis, " \
        "#{discards[:logged]} logged"
    end

    # The limit's stretches (the most at once seen in each / its limit) and when each change was made.
    def tuned(report)
      stretches = report[:limited][:tuned].map { "#{_1[:most]}/#{_1[:limit]}" }.join(", ")
      changes = report[:tuner][:changes].map { "#{_1[:limit] || "reset"} at #{_1[:at_s]} s" }.join(", ")
      "#{report[:tuner][:schedule]} (#{changes}); most at once / limit in each stretch: #{stretches}"
    end

    def job_limits(report)
      queues = report[:plan][:job_limits]
      report[:job_limits].map do |id, seen|
        ["`#{id}`", queues.dig(id, :queues).join(", "), "#{seen[:max]} / #{seen[:limit]}", seen[:max_per_process]]
      end
    end

    def repeats(jobs)
      counts = jobs[:repeats]
      "#{jobs[:runs]}; #{jobs[:run_more_than_once]} (runs again after a kill: #{counts[:killed_running]} cut " \
        "short, #{counts[:killed_unacknowledged]} not yet acknowledged, #{counts[:killed_after_outage]} not yet " \
        "acknowledged as it ended during the Redis outage; unexplained #{jobs[:repeated_unexplained].size})"
    end

    # Each job run more than once, and why each run after its first came
    # (see Duplicates), REPEATED_SHOWN at most.
    def repeated(jobs)
      return [] if jobs.empty?

      rows = jobs.first(REPEATED_SHOWN).map do |job|
        why = job[:repeats].map { "#{_1[:category] || "UNEXPLAINED"}: #{_1[:evidence]}" }.join("; ")
        [job[:jid], job[:runs].size, why]
      end
      more = jobs.size > REPEATED_SHOWN ? ["", "#{jobs.size - REPEATED_SHOWN} more in latest.json."] : []
      [*table(["job run more than once", "runs", "why it ran again"], rows), *more, ""]
    end

    def chaos(chaos)
      reaped = chaos[:reaped]
      restart = chaos[:redis_restart]
      [["kills / replacements", "#{chaos[:kills]} / #{chaos[:replacements]}"],
       ["dead capsules reaped (busy slots freed, jobs pushed back)",
        "#{reaped[:capsules]} (#{reaped[:slots]}, #{reaped[:jobs]})"],
       ["Redis outage", restart ? outage(restart) : "none"]]
    end

    def outage(restart)
      "at #{restart[:at_s]} s, down #{restart[:down_s]} s; #{restart[:survived].size} processes lived through it, " \
        "their fetches and heartbeats raising (#{restart[:survived].join(", ")})"
    end

    def concurrency(report)
      report[:concurrency].map do |queue, seen|
        [queue, "#{seen[:max]} / #{seen[:limit] || "-"}", "#{seen[:max_per_process]} / #{seen[:process_limit] || "-"}"]
      end
    end

    def leftovers(left)
      return "see the failures" unless left[:clean]

      "nothing (busy lists, in-progress lists, capsule keys, capsules set, job limits' busy and parked lists, " \
        "parked set, queues, dead set)"
    end
  end
end
