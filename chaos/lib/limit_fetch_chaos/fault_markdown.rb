# frozen_string_literal: true

module LimitFetchChaos
  # A FaultReport (#to_h) as short Markdown: what bin/chaos --fault prints.
  module FaultMarkdown
    module_function

    def render(report)
      ["# bin/chaos --fault #{report[:fault][:spec]}: #{report[:passed] ? "passed" : "FAILED"}", "",
       Markdown.environment(report[:environment]), "", *Markdown.table(["", ""], facts(report)), "",
       *Markdown.table(["limit", "most at once / limit (woken originals left out)"], limits(report)), "",
       *RepeatsMarkdown.table(report[:jobs][:repeated_jobs]), *Markdown.verdict(report[:failures])]
        .join("\n") << "\n"
    end

    def facts(report)
      [["fault", fault(report[:fault])], *jobs(report[:jobs]),
       ["capsules reaped (busy slots freed, jobs pushed back)", report[:fault][:reaped].values.join(", ")],
       ["stalls (jobs waiting while none of theirs ran)", report[:stalls].size],
       ["booked 2 heartbeat periods after the last job", booked(report[:booked])],
       ["seconds", report[:seconds]]]
    end

    def jobs(jobs)
      [["jobs pushed / completed / lost", "#{jobs[:pushed]} / #{jobs[:completed]} / #{jobs[:lost]}"],
       ["runs; repeats by category", "#{jobs[:runs]}; #{jobs[:repeats].map { _1.join(" ") }.join(", ")}"]]
    end

    # A Report's or a FaultReport's freeze (Frozen#to_h, with its woken originals).
    def frozen(freeze)
      return "none" unless freeze

      "#{freeze[:worker]} stopped (SIGSTOP) for #{freeze[:seconds]} s, holding #{freeze[:held]&.size.inspect} jobs; " \
        "#{freeze[:originals]} of its runs went on once it woke (its woken originals, left out of the limits' counts)"
    end

    # Booked#to_h, in short.
    def booked(booked) = booked.values.all?(&:empty?) ? "nothing" : "see the failures"

    def fault(fault)
      redis = fault[:redis] && "Redis down #{fault[:redis][:down_s]} s from #{fault[:redis][:at_s]} s"
      freeze = fault[:freeze] && frozen(fault[:freeze])
      [redis, freeze].compact.join("; ")
    end

    def limits(report) = report[:limits].map { |id, seen| ["`#{id}`", "#{seen[:max]} / #{seen[:limit]}"] }
  end
end
