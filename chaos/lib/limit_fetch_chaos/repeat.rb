# frozen_string_literal: true

module LimitFetchChaos
  # bin/chaos --repeat N: the same case N times in a row, the n-th with
  # seed SEED + n - 1, then a summary: how many passed and failed, and what
  # broke in each that failed. A run that could not go on (Failure) counts
  # as failed, with its reason.
  class Repeat
    Outcome = Data.define(:seed, :passed, :failures, :seconds)

    def initialize(options, out: $stdout)
      @options = options
      @out = out
    end

    # Yields each run's options, gets its report (or raises Failure);
    # returns the outcomes.
    def run
      Array.new(@options.repeat) do |i|
        options = @options.with(seed: @options.seed + i)
        say(i, options)
        started = LimitFetchChaos.monotonic
        passed, failures = outcome { yield options }
        Outcome.new(seed: options.seed, passed:, failures:, seconds: LimitFetchChaos.monotonic - started)
      end
    end

    def summary(outcomes)
      failed = outcomes.reject(&:passed)
      ["", "## #{outcomes.size} runs: #{outcomes.size - failed.size} passed, #{failed.size} failed", "",
       *outcomes.map { "- seed #{_1.seed}: #{_1.passed ? "passed" : "FAILED"} (#{_1.seconds.round} s)" },
       *failed.flat_map { |run| ["", "### seed #{run.seed}", *run.failures.map { "- #{_1}" }] }].join("\n")
    end

    private

    def say(index, options)
      @out.puts "\n==> run #{index + 1} of #{@options.repeat} (seed #{options.seed})" if @options.repeat > 1
    end

    # [passed, failures] of the run the block makes.
    def outcome
      report = yield
      [report.passed?, report.failures]
    rescue Failure => e
      @out.puts "bin/chaos: the run could not go on: #{e.message}"
      [false, ["could not go on: #{e.message.lines.first.strip}"]]
    end
  end
end
