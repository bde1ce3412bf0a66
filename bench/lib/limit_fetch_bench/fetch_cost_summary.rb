# frozen_string_literal: true

module LimitFetchBench
  # The fetch cost per scenario and variant: time per retrieve_work call
  # (median of the runs' medians, min-max; robust to the machine's noise),
  # ratio to BasicFetch (and, with --baseline, of each LimitFetch variant to
  # its twin), and the medians of the runs' mean and p99 time, Redis commands
  # and Redis time per call. The runs come from one measuring process, or
  # with --baseline from several, those of the baseline's build being twins.
  class FetchCostSummary
    MEDIANS = %w[mean_us p99_us commands_per_call redis_us_per_call].freeze

    # `processes`: the results of the fetch-cost processes; `rev`: the
    # baseline's revision, if any.
    def initialize(processes, rev)
      @rev = rev
      @runs = processes.flat_map { |process| process["runs"].map { as_twin(_1, process["build"]) } }
      @scenarios = processes.first&.fetch("scenarios")
      @labels = processes.to_h { [_1["build"], _1["variants"]] }
    end

    def to_h
      return {} if @runs.empty?

      @runs.group_by { _1["scenario"] }.to_h do |scenario, runs|
        variants = runs.group_by { _1["variant"] }
        base = p50(variants.fetch("basic"))
        [scenario, {"label" => @scenarios[scenario],
                    "variants" => ordered(variants).to_h { |key, list| [key, variant(key, list, base, variants)] }}]
      end
    end

    private

    def as_twin(run, build) = build ? run.merge("variant" => Twin.key(run["variant"], build)) : run

    def label(key)
      key, rev = Twin.split(key)
      rev ? Twin.label(@labels[rev][key], rev) : @labels[nil][key]
    end

    # This checkout's variants in their order, each followed by its twin.
    def ordered(variants)
      order = @runs.map { Twin.split(_1["variant"]).first }.uniq
      variants.sort_by { |key, _| Twin.split(key).then { |base, rev| [order.index(base), rev ? 1 : 0] } }
    end

    def variant(key, runs, base, variants)
      {"label" => label(key), "runs" => runs.size, "calls" => runs.sum { _1["calls"] },
       "p50_us" => Stats.spread(runs.map { _1["p50_us"] }), "ratio" => Stats.ratio(p50(runs), base)}
        .merge(MEDIANS.to_h { |name| [name, Stats.median(runs.map { _1[name] })] }, rev_ratio(key, runs, variants))
    end

    def rev_ratio(key, runs, variants)
      twin = @rev && variants[Twin.key(key, @rev)]
      twin ? {"rev_ratio" => Stats.ratio(p50(runs), p50(twin))} : {}
    end

    def p50(runs) = Stats.median(runs.map { _1["p50_us"] })
  end
end
