# frozen_string_literal: true

module LimitFetchChaos
  # A report (Report#to_h) as short Markdown: what bin/chaos prints at the end
  # and writes to results/latest.md.
  module Markdown
    module_function

    def render(report)
      ["# bin/chaos: #{report[:passed] ? "passed" : "FAILED"}", "", environment(report[:environment]), "",
       setup(report[:plan]), "", *tables(report), *verdict(report[:failures])].join("\n") << "\n"
    end

    def tables(report)
      [*table(["", ""], facts(report)), "",
       *table(["queue", "most at once / limit", "most in one process / limit"], concurrency(report)), "",
       *table(["job limit", "queues", "most at once / limit", "most in one process"], job_limits(report)), "",
       *RatesMarkdown.table(report[:rates], report[:plan]), "",
       *RepeatsMarkdown.table(report[:jobs][:repeated_jobs])]
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
        "#{plan[:kill_every_s].join("-")} s; Redis down #{plan[:redis_down_s]} s and a process frozen " \
        "#{plan[:freeze_s]} s once each; heartbeat period #{plan[:heartbeat_period]} s; " \
        "Redis `#{plan[:redis]}`; seed #{plan[:seed]}."
    end

    # With --jobs, the rated queue's besides, pushed while those are.
    def jobs(plan)
      [("#{plan[:jobs]} jobs (and #{RatedLimit.queues.join(", ")}'s meanwhile)" if plan[:jobs]),
       ("jobs pushed for #{plan[:duration]} s" if plan[:duration])].compact.join(" or ")
    end

    def facts(report)
      jobs = report[:jobs]
      [["jobs enqueued / completed / discarded / lost",
        "#{jobs[:enqueued]} / #{jobs[:completed]} / #{jobs[:discarded]} / #{jobs[:lost]}"],
       ["runs; jobs run more than once", RepeatsMarkdown.summary(jobs)], *limited(report), *chaos(report[:chaos]),
       ["time until every job completed; throughput",
        "#{report[:timing][:seconds]} s; #{report[:timing][:jobs_per_second]} jobs/s"],
       *aftermath(report)]
    end

    def aftermath(report)
      [["booked 2 heartbeat periods after the last job ended", FaultMarkdown.booked(report[:booked_after_jobs])],
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

    def unlogged(count) = count.to_i.positive? ? ", #{count} whose log line a kill cut off" : ""

    def discards(limited)
      discards = limited[:discards]
      "#{discards[:jobs]} jobs: #{discards[:counted].fetch(Discards::NAME, 0)} counted in Redis, " \
        "#{discards[:logged]} logged#{unlogged(discards[:unlogged])}"
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

    def chaos(chaos)
      reaped = chaos[:reaped]
      restart = chaos[:redis_restart]
      [["kills / replacements", "#{chaos[:kills]} / #{chaos[:replacements]}"],
       ["dead capsules reaped (busy slots freed, jobs pushed back)",
        "#{reaped[:capsules]} (#{reaped[:slots]}, #{reaped[:jobs]})"],
       ["Redis outage", restart ? outage(restart) : "none"], ["freeze", FaultMarkdown.frozen(chaos[:freeze])]]
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
        "parked set, rates' windows, released counts and rate-parked set, queues, dead set)"
    end
  end
end
