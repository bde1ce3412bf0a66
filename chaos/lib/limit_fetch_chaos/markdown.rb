# frozen_string_literal: true

module LimitFetchChaos
  # A report as short Markdown (report.md.erb): what bin/chaos prints at the
  # end and writes to results/latest.md (Report#to_h), or what bin/chaos
  # --fault prints (FaultReport#to_h). The template holds the prose and the
  # facts; the tables come from the column lists here.
  class Markdown
    include LimitFetchTools::Markdown

    # Rows: [name, figures] (Report#to_h's).
    CONCURRENCY = [
      ["queue", 0], ["most at once / limit", -> { "#{_1[1][:max]} / #{_1[1][:limit] || "-"}" }],
      ["most in one process / limit", -> { "#{_1[1][:max_per_process]} / #{_1[1][:process_limit] || "-"}" }]
    ].freeze
    JOB_LIMITS = [
      ["job limit", 0, :code], ["queues", -> { plan[:job_limits].dig(_1[0], :queues).join(", ") }],
      ["most at once / limit", -> { "#{_1[1][:max]} / #{_1[1][:limit]}" }],
      ["most in one process", [1, :max_per_process]]
    ].freeze
    # Each rate's starts, its tightest window, the shortest span of one start
    # more than its limit against what the check allows (its period less
    # RATE_SLACK), and its parked jobs' waits (Report#rates_h).
    RATES = [
      ["rate", 0, :code], ["queues", -> { plan.dig(:rates, _1[0], :queues).join(", ") }], ["starts", [1, :starts]],
      ["most in any period / limit", -> { "#{_1[1][:most_in_period]} / #{_1[1][:limit]} per #{_1[1][:period_s]} s" }],
      ["shortest span of limit + 1 starts (checked: at least)",
       -> { "#{_1[1][:shortest_span_ms] || "-"} ms (#{_1[1][:checked_ms].round} ms)" }],
      ["counted by the gem (Redis's clock): starts, most in any period; lags from fetch to start within",
       [1, :recorded], :recorded],
      ["samples with jobs parked", -> { "#{_1[1][:parked_samples]} of #{_1[1][:samples]}" }],
      ["longest wait with jobs parked and none begun within a period (a stall: over)",
       -> { "#{_1[1][:longest_wait_s]} s (#{_1[1][:stall_after_s]} s)" }]
    ].freeze
    # Each rate's leases (RecordedStarts#leases), after its gem's count:
    # for a report that has them (results/latest.json predates them).
    LEASES = ["leases granted: of 1 start / of more (largest); starts leased, given back", [1, :leases],
              :leases].freeze
    # A fair class's tenants (FairShares#to_h): rows [class, tenant, figures].
    FAIR_SHARES = [
      ["fair class: tenant", -> { "#{_1[0]}: #{_1[1]}" }],
      ["pushed / begun", -> { "#{_1[2][:pushed]} / #{_1[2][:begun]}" }],
      ["median wait, push to start", -> { "#{_1[2][:wait_ms] || "-"} ms" }],
      ["begun while another had #{FairShares::LARGE}+ waiting", [2, :behind_large]],
      ["begun while every tenant had jobs waiting (share)",
       -> { "#{_1[2][:all_waiting]} (#{_1[2][:all_waiting_share] || "-"}%)" }]
    ].freeze
    FAULT_LIMITS = [["limit", 0, :code], ["most at once / limit (woken originals left out)",
                                          -> { "#{_1[1][:max]} / #{_1[1][:limit]}" }]].freeze
    # The jobs run more than once (Duplicates), SHOWN at most.
    REPEATS = [["job run more than once", :jid], ["runs", -> { _1[:runs].size }],
               ["why it ran again", -> { _1[:repeats].map { |repeat| Duplicates.why(repeat) }.join("; ") }]].freeze
    SHOWN = 30

    def self.render(report) = new(report).render

    def initialize(report)
      @report = report
    end

    def render = LimitFetchTools::Markdown.render(File.join(__dir__, "report.md.erb"), binding)

    private

    attr_reader :report

    %i[plan jobs limited tuner chaos fault].each { |name| define_method(name) { report[name] } }

    def discards = limited[:discards]
    def code(name) = "`#{name}`"
    # "a 2, b 0": a hash's pairs.
    def pairs(hash) = hash.map { _1.join(" ") }.join(", ")
    # Booked#to_h, in short.
    def booked(booked) = booked.values.all?(&:empty?) ? "nothing" : "see the failures"

    def recorded(seen)
      lag = seen[:lag_ms] ? "#{seen[:lag_ms]} ms" : "- (a run paired with none within FETCH_LAG)"
      "#{seen[:starts]}, #{seen[:most_in_period]}; #{lag}"
    end

    def rate_columns = report[:rates].values.any? { _1[:leases] } ? RATES.dup.insert(6, LEASES) : RATES

    # RecordedStarts#leases, in short.
    def leases(seen)
      "#{seen[:of_one]} / #{seen[:of_more]} (#{seen[:largest]}); #{seen[:starts]}, #{seen[:given_back]}"
    end

    # A Report's or a FaultReport's freeze (Frozen#to_h, with its woken originals).
    def frozen(freeze)
      return "none" unless freeze

      "#{freeze[:worker]} stopped (SIGSTOP) for #{freeze[:seconds]} s, holding #{freeze[:held]&.size.inspect} jobs; " \
        "#{freeze[:originals]} of its runs went on once it woke (its woken originals, left out of the limits' counts)"
    end
  end
end
