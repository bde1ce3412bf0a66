# frozen_string_literal: true

module LimitFetchChaos
  # A report (Report#to_h) as short Markdown: what bin/chaos prints at the end
  # and writes to results/latest.md.
  module Markdown
    module_function

    def render(report)
      ["# bin/chaos: #{report[:passed] ? "passed" : "FAILED"}", "", environment(report[:environment]), "",
       setup(report[:plan]), "", *table(["", ""], facts(report)), "",
       *table(["queue", "most at once / limit", "most in one process / limit"], concurrency(report)), "",
       *table(["job limit (KeyedChaosJob, queue k)", "most at once / limit", "most in one process"],
         job_limits(report)), "",
       *verdict(report[:failures])].join("\n") << "\n"
    end

    def table(header, rows)
      [header, header.map { "---" }, *rows].map { |cells| "| #{cells.join(" | ")} |" }
    end

    def verdict(failures) = failures.empty? ? ["No failures."] : failures.map { "- FAILED: #{_1}" }

    def environment(env)
      "#{env[:date]}; #{env[:cpus]} CPUs (#{env[:cpu]}), Linux #{env[:kernel]}; Ruby #{env[:ruby]}, " \
        "Sidekiq #{env[:sidekiq]}, Redis #{env[:redis]}; commit #{env[:commit]}"
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
      [["jobs enqueued / completed / lost", "#{jobs[:enqueued]} / #{jobs[:completed]} / #{jobs[:lost]}"],
       ["runs; jobs run more than once", repeats(jobs)], ["KeyedChaosJob's jobs", keyed(report[:keyed])],
       *chaos(report[:chaos]),
       ["time until every job completed; throughput",
        "#{report[:timing][:seconds]} s; #{report[:timing][:jobs_per_second]} jobs/s"],
       ["left in Redis after the processes stopped", leftovers(report[:redis_after_stop])]]
    end

    def keyed(keyed)
      "#{keyed[:enqueued]} enqueued / #{keyed[:completed]} completed / #{keyed[:lost]} lost, #{keyed[:tenants]} " \
        "tenants; #{keyed[:carried]} pushes carried their job limits, #{keyed[:not_carried]} did not; parked at " \
        "most #{keyed[:parked_most]} at once, some parked in #{keyed[:ticks_parked]} of #{keyed[:ticks]} feeder ticks"
    end

    def job_limits(report)
      report[:job_limits].map { |id, seen| ["`#{id}`", "#{seen[:max]} / #{seen[:limit]}", seen[:max_per_process]] }
    end

    def repeats(jobs)
      "#{jobs[:runs]}; #{jobs[:run_more_than_once]} (after a kill #{jobs[:repeated_after_kill]}, across the " \
        "Redis restart #{jobs[:repeated_after_restart]}, unexplained #{jobs[:repeated_unexplained].size})"
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
