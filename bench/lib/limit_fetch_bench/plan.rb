# frozen_string_literal: true

module LimitFetchBench
  # The order of the runs: round after round, each round runs every variant
  # of every section once (A B C ... A B C ...), so that drift and noise on
  # the machine spread over all variants alike; with a baseline revision,
  # each LimitFetch variant's twin runs right after it. The fetch cost comes
  # last, in one process that alternates its variants itself; with a
  # baseline, one such process per round and build, this checkout's first.
  # `build`: nil for this checkout's gem, else the baseline's revision.
  class Plan
    Step = Data.define(:section, :variant, :round, :build)

    # `rev`: the baseline's revision, if any.
    def initialize(options, rev: nil)
      @options = options
      @rev = rev
    end

    def steps
      rounds = (1..@options.runs).flat_map do |round|
        %w[throughput delayed idle].select { @options.section?(_1) }.flat_map do |section|
          variants(section).map { Step.new(section, _1, round, Variant[_1].build) }
        end
      end
      rounds + fetch_steps
    end

    def variants(section)
      keys = section == "idle" ? Variant::IDLE : Variant::THROUGHPUT
      return keys unless @rev

      keys.flat_map { |key| Variant[key].limit_fetch? ? [key, Variant[key].twin(@rev).key] : [key] }
    end

    def jobs(section, variant)
      return @options.slow_jobs if Variant[variant].slow?

      section == "delayed" ? @options.delayed_jobs : @options.jobs
    end

    private

    def fetch_steps
      return [] unless @options.section?("fetch")
      return [Step.new("fetch", nil, nil, nil)] unless @rev

      (1..@options.runs).flat_map { |round| [nil, @rev].map { Step.new("fetch", nil, round, _1) } }
    end
  end
end
