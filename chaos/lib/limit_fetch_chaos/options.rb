# frozen_string_literal: true

module LimitFetchChaos
  # Command-line options of bin/chaos. `jobs` nil: no count, `duration`
  # decides. `results`: the directory the report goes to, nil for none.
  # `server`: "redis" or "valkey" (LimitFetchTools::SERVERS). `fault`: a
  # FaultSpec, nil for the default plan; `repeat`: how many runs in a row.
  Options = Data.define(:jobs, :duration, :seed, :timeout, :results, :server, :fault, :repeat) do
    def initialize(fault: nil, repeat: 1, **)
      super
    end
  end

  # One fault of --fault KIND:SECONDS (see FaultPlan).
  FaultSpec = Data.define(:kind, :seconds)

  class FaultSpec
    KINDS = %w[redis-restart redis-stop freeze].freeze

    def self.parse(text)
      kind, seconds = text.split(":", 2)
      unless KINDS.include?(kind) && seconds&.match?(/\A\d+(\.\d+)?\z/) && Float(seconds).positive?
        raise OptionParser::InvalidArgument, "#{text}: expected KIND:SECONDS, KIND one of #{KINDS.join(", ")}"
      end

      new(kind: kind, seconds: Float(seconds))
    end

    def redis? = kind.start_with?("redis")

    def to_s = "#{kind}:#{seconds.to_s.delete_suffix(".0")}"
  end

  class Options
    DEFAULT_JOBS = 6000
    QUICK_SECONDS = 15.0

    BANNER = "Usage: bin/chaos [options]\n\nRuns jobs on three Sidekiq processes through sidekiq-limit_fetch-rs " \
             "while it kills them, freezes one\nand takes Redis down; checks that no job was lost, that no limit " \
             "was exceeded and that nothing\nwas left behind. With --fault, one fault on two processes instead " \
             "(see bin/chaos's header).\n\n"

    # [key, switch, type, description]
    FLAGS = [
      [:jobs, "--jobs N", Integer, "how many jobs to push (default #{DEFAULT_JOBS})"],
      [:duration, "--duration SECONDS", Float, "push jobs for that long instead (with --jobs: until either is done)"],
      [:seed, "--seed N", Integer, "seed of the random choices (default: random; the report shows it)"],
      [:timeout, "--timeout SECONDS", Float, "wait that long at most after the last push (default 300)"],
      [:server, "--server NAME", LimitFetchTools::SERVERS.keys, "run it on redis (the default) or valkey"],
      [:repeat, "--repeat N", Integer, "run N times in a row (seeds SEED, SEED+1...) and summarise"],
      [:fault, "--fault KIND:SECONDS", FaultSpec, "one fault on two processes: #{FaultSpec::KINDS.join(", ")}"]
    ].freeze

    def self.parse(argv)
      values = {jobs: nil, duration: nil, seed: Random.new_seed % 1_000_000, timeout: 300.0,
                results: File.join(ROOT, "results"), server: ENV.fetch("LIMIT_FETCH_SERVER", "redis"),
                fault: nil, repeat: 1}
      parser(values).parse!(argv)
      raise OptionParser::NeedlessArgument, argv.join(" ") if argv.any?

      values[:jobs] ||= DEFAULT_JOBS unless values[:duration] || values[:fault]
      validate(values)
      new(**values)
    end

    def self.parser(values)
      accept = {FaultSpec => proc { FaultSpec.parse(_1) }}
      LimitFetchTools::Options.parser(BANNER, FLAGS, values, accept:) do |opts|
        opts.on("--quick", "as --duration #{QUICK_SECONDS.to_i}: about 75 s in all") do
          values[:duration] = QUICK_SECONDS
        end
        opts.on("--no-results", "write no report to chaos/results") { values[:results] = nil }
      end
    end

    def self.validate(values)
      LimitFetchTools::Options.at_least(values, %i[jobs])
      LimitFetchTools::Options.positive(values, %i[duration])
      LimitFetchTools::Options.at_least(values, %i[repeat])
      validate_fault(values)
    end

    def self.validate_fault(values)
      return unless values[:fault] && values.values_at(:jobs, :duration).any?

      raise OptionParser::InvalidArgument, "--fault sets its own jobs: no --jobs, --duration or --quick"
    end
  end
end
