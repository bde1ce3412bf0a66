# frozen_string_literal: true

module LimitFetchBench
  # Everything one invocation measured, per section and variant (each row's
  # figures: SummaryFigures): its ratios to the section's reference
  # (BasicFetch; for distinct keys, no key) and to the same jobs with no key
  # or no limit, and with a baseline revision (--baseline) of each of this
  # checkout's variants to its twin ("rev_ratio" and "<cost>_rev_ratio":
  # this checkout's over the twin's; of a time, the twin's over this
  # checkout's). A twin's own ratios are to BasicFetch in the throughput and
  # idle sections, to its build's variants in the keyed one. Then the limit
  # check of every run, and the raw runs. The rates' windows opening:
  # RateOpeningsSummary. The back_off and fair sections: a row per run.
  class Summary
    include SummaryFigures

    # A hot-key row's figures (SummaryFigures#hot_row).
    KEYED_HOT = {first: %w[jobs hot_limit], most: %w[hot_max_running cold_max_running max_parked],
                 medians: %w[executed dropped rescheduled]}.freeze
    RATE_HOT = {first: %w[hot_jobs rate hot_ideal_s], most: %w[hot_most_in_window_perform],
                medians: %w[jobs executed rescheduled push_seconds]}.freeze
    KEYS = %w[jobs before after new_keys new_key_names].freeze

    # `setup`: what the runner started, for the meta: "redis" (its version),
    # "proxy" (DelayProxy#to_h) and "baseline" (Baseline#to_h), or nil.
    def initialize(runs, options:, setup:, seconds:)
      @runs = runs
      @options = options
      @setup = setup
      @seconds = seconds
      @rev = setup["baseline"]&.fetch("rev")
      @groups = runs.group_by { _1["section"] }.transform_values { |list| list.group_by { _1["variant"] } }
    end

    def to_h
      {"meta" => meta, "throughput" => throughput("throughput"), "delayed" => throughput("delayed"),
       "idle" => idle, "fetch_cost" => fetch_cost(@runs.select { _1["section"] == "fetch" }), "keyed" => keyed,
       "rate" => rate, "limit_checks" => LimitCheck.all(@runs), "runs" => @runs}.merge(per_run)
    end

    private

    def meta
      {"date" => Time.now.utc.iso8601, "seconds" => @seconds.round(1), "cpus" => Etc.nprocessors,
       "cpu_model" => LimitFetchTools.cpu_model,
       "ruby" => RUBY_DESCRIPTION, "sidekiq" => Sidekiq::VERSION, "redis" => @setup["redis"],
       "gem" => Sidekiq::LimitFetch::VERSION, "poll_range" => @runs.filter_map { _1["poll_range"] }.first,
       "options" => @options.to_h.except(:output).transform_keys(&:to_s)}.merge(@setup.slice("proxy", "baseline"))
    end

    def group(section) = @groups.fetch(section, {})
    def twin(groups, key) = @rev && groups[Twin.key(key, @rev)]

    # The keys whose runs there are, each followed by its twin's, if any.
    def present(groups, keys) = keys.flat_map { [_1, (Twin.key(_1, @rev) if @rev)] }.compact.select { groups[_1] }

    # The key of the variant `key` in `variant`'s build.
    def same_build(key, variant) = variant.build && key ? Twin.key(key, variant.build) : key

    # A row per variant of `section` that ran (of `keys` only, each before
    # its twin), the block's of the variant, its runs, the section's runs
    # and its twin's.
    def rows(section, keys = nil)
      groups = group(section)
      keys = keys ? present(groups, keys) : groups.keys
      keys.to_h { [_1, yield(Variant[_1], groups[_1], groups, twin(groups, _1))] }
    end

    def throughput(section)
      rows(section) { |variant, runs, groups, twin| throughput_row(variant, runs, groups[variant.baseline], twin) }
    end

    def idle = rows("idle") { |variant, runs, groups, twin| idle_row(variant, runs, groups["basic"], twin) }

    # Per scenario, from the fetch-cost processes' results (with
    # --baseline, those of the baseline's build are twins).
    def fetch_cost(processes)
      runs = processes.flat_map { |process| process["runs"].map { fetch_run(_1, process) } }
      order = runs.map { Twin.split(_1["variant"]).first }.uniq
      runs.group_by { _1["scenario"] }.to_h do |scenario, list|
        [scenario, {"label" => processes.first["scenarios"][scenario], "variants" => fetch_rows(list, order)}]
      end
    end

    # A run keyed and labelled as its process's build's variant (a twin's, with --baseline).
    def fetch_run(run, process)
      label = process["variants"][run["variant"]]
      return run.merge("label" => label) unless (build = process["build"])

      run.merge("variant" => Twin.key(run["variant"], build), "label" => Twin.label(label, build))
    end

    # This checkout's variants in their order, each followed by its twin.
    def fetch_rows(list, order)
      variants = list.group_by { _1["variant"] }.sort_by { |key, _| [order.index(Twin.split(key)[0]), key] }.to_h
      variants.to_h do |key, runs|
        [key, fetch_row(runs.first["label"], runs, variants.fetch("basic"), twin(variants, key))]
      end
    end

    def keyed
      return {} if group("keyed").empty?

      distinct = rows("keyed", KeyedVariants::DISTINCT) do |variant, runs, groups, twin|
        throughput_row(variant, runs, groups[same_build(variant.baseline, variant)], twin, COSTS)
      end
      {"distinct" => distinct, "hot" => rows("keyed", KeyedVariants::HOT + KeyedVariants::SEEDS, &method(:keyed_hot)),
       "keys" => group("keyed")["keys"]&.first&.slice(*KEYS)}
    end

    def keyed_hot(variant, runs, groups, twin)
      row = hot_row(variant, runs, KEYED_HOT)
            .merge(hot_versus(runs, *%w[hot_none hot_queue2].map { groups[same_build(_1, variant)] }))
      twin ? row.merge(hot_rev_ratios(runs, twin)) : row
    end

    # A row per back_off run, in the order they ran, per fair_share run, and
    # per memory variant and count of jobs (SummaryFigures#memory_row);
    # no key where the section did not run, so that the summary of the
    # other sections reads as it did before them.
    def per_run
      back_off = @runs.select { _1["section"] == "back_off" }
      fair = group("fair")
      {"back_off" => (back_off.map { back_off_row(_1) } if back_off.any?), "memory" => memory_rows,
       "fair" => (fair.fetch("fair_share", []).map { fair_row(_1, fair) } if fair.any?)}.compact
    end

    def rate
      groups = group("rate")
      return {} if groups.empty?

      {"throughput" => rows("rate", RateVariants::THROUGHPUT, &method(:rate_throughput)),
       "hot" => rows("rate", RateVariants::HOT, &method(:rate_hot)), "idle" => rate_idle(groups)}
        .merge({"idle_twin" => (rate_idle(groups, @rev) if @rev)}.compact)
    end

    # A twin's "× no limit": to its own build's.
    def rate_throughput(variant, runs, groups, _twin)
      throughput_row(variant, runs, groups[variant.baseline], nil)
        .merge(rate_counted(runs, variant.rate && groups[same_build("rate_none", variant)]))
    end

    def rate_hot(variant, runs, *) = hot_row(variant, runs, RATE_HOT).merge(rate_backlog(runs))

    # The windows opening on an idle process (of the baseline's gem with `rev`); nil if it did not run.
    def rate_idle(groups, rev = nil)
      summary = RateOpeningsSummary.new(groups[rev ? Twin.key("rate_idle", rev) : "rate_idle"] || []).to_h
      summary&.merge(rev ? {"gem" => "@#{rev}"} : {})
    end
  end
end
