# frozen_string_literal: true

module LimitFetchBench
  # The order of the runs: round after round, each round runs every variant
  # of every section once (A B C ... A B C ...), so that drift and noise on
  # the machine spread over all variants alike. The fetch cost comes last, in
  # one process that alternates its variants itself.
  class Plan
    Step = Data.define(:section, :variant, :round)

    def initialize(options)
      @options = options
    end

    def steps
      rounds = (1..@options.runs).flat_map do |round|
        %w[throughput delayed idle].select { @options.section?(_1) }.flat_map do |section|
          variants(section).map { Step.new(section, _1, round) }
        end
      end
      rounds + (@options.section?("fetch") ? [Step.new("fetch", nil, nil)] : [])
    end

    def variants(section) = section == "idle" ? Variant::IDLE : Variant::THROUGHPUT

    def jobs(section, variant)
      return @options.slow_jobs if Variant[variant].slow?

      section == "delayed" ? @options.delayed_jobs : @options.jobs
    end
  end
end
