# frozen_string_literal: true

module LimitFetchBench
  # The order of the runs: round after round, each round runs every variant
  # of every section once (A B C ... A B C ...), so that drift and noise on
  # the machine spread over all variants alike; with a baseline revision,
  # each LimitFetch variant and its twin run one after the other, the twin
  # second in odd rounds and first in even ones, so that neither build
  # always runs on the heels of the other. The fetch cost comes last, in one
  # process that alternates its variants itself; with a baseline, one such
  # process per round and build, in the same order. `build`: nil for this
  # checkout's gem, else the baseline's revision. The keyed section's
  # LimitFetch variants (KeyedVariants::TWINNED) have twins only if the
  # baseline's gem has job limits (`keyed_twins`); the seeds' approaches and
  # what its distinct keys leave in Redis run in the first round only
  # (KeyedVariants::ONCE), without twins. The rate section's LimitFetch
  # variants have twins (RateVariants::TWINNED); its limiter runs in the
  # first round only (RateVariants::ONCE).
  # The back_off section's variants have no twins and run in the first
  # --back-off-runs rounds only (BackOffVariants.of_round); the fair
  # section's likewise (FairVariants.of_round). The memory section's
  # LimitFetch variant has a twin, as the throughput section's.
  class Plan
    Step = Data.define(:section, :variant, :round, :build)

    # `rev`: the baseline's revision, if any; `keyed_twins`: whether the
    # keyed section's variants get twins too.
    def initialize(options, rev: nil, keyed_twins: false)
      @options = options
      @rev = rev
      @keyed_twins = rev && keyed_twins
    end

    def steps
      rounds = (1..@options.runs).flat_map do |round|
        (Options::SECTIONS - ["fetch"]).select { @options.section?(_1) }.flat_map do |section|
          of_section(section, round).map { Step.new(section, _1, round, Variant[_1].build) }
        end
      end
      rounds + fetch_steps
    end

    def of_section(section, round)
      return FairVariants.of_round(round, @options) if section == "fair"

      section == "back_off" ? BackOffVariants.of_round(round, @options) : variants(section, round)
    end

    def variants(section, round)
      return keyed(round) if section == "keyed"
      return rate(round) if section == "rate"

      keys = {"idle" => Variant::IDLE, "memory" => MemoryVariants::KEYS}.fetch(section, Variant::THROUGHPUT)
      return keys unless @rev

      keys.flat_map { |key| Variant[key].limit_fetch? ? twinned(key, round) : [key] }
    end

    def jobs(section, variant)
      return @options.slow_jobs if Variant[variant].slow?

      case Variant[variant].workload
      when :hot then return @options.hot_jobs + KeyedVariants::COLD_JOBS
      when :keys then return @options.keys
      when :rate_hot, :rate_idle, :rate_throughput then return RateVariants.jobs(Variant[variant].workload, @options)
      when :back_off then return @options.back_off_jobs
      end

      section == "delayed" ? @options.delayed_jobs : @options.jobs
    end

    private

    def fetch_steps
      return [] unless @options.section?("fetch")
      return [Step.new("fetch", nil, nil, nil)] unless @rev

      (1..@options.runs).flat_map { |round| pair(nil, @rev, round).map { Step.new("fetch", nil, round, _1) } }
    end

    def keyed(round)
      keys = KeyedVariants::DISTINCT + KeyedVariants::HOT
      keys = keys.flat_map { |key| KeyedVariants::TWINNED.include?(key) ? twinned(key, round) : [key] } if @keyed_twins
      keys + (round == 1 ? KeyedVariants::ONCE : [])
    end

    def rate(round)
      keys = RateVariants.of_round(round)
      return keys unless @rev

      keys.flat_map { |key| RateVariants::TWINNED.include?(key) ? twinned(key, round) : [key] }
    end

    def twinned(key, round) = pair(key, Twin.key(key, @rev), round)

    def pair(current, twin, round) = round.odd? ? [current, twin] : [twin, current]
  end
end
