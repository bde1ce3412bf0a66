# frozen_string_literal: true

module LimitFetchChaos
  # Command-line options of bin/chaos. `jobs` nil: no count, `duration`
  # decides. `results`: the directory the report goes to, nil for none.
  # `server`: "redis" or "valkey" (LimitFetchTools::SERVERS).
  Options = Data.define(:jobs, :duration, :seed, :timeout, :results, :server)

  class Options
    DEFAULT_JOBS = 6000
    QUICK_SECONDS = 15.0

    BANNER = "Usage: bin/chaos [options]\n\nRuns jobs on three Sidekiq processes through sidekiq-limit_fetch-rs " \
             "while it kills them and restarts Redis;\nchecks that no job was lost, that no limit was exceeded " \
             "and that nothing was left behind.\n\n"

    # [key, switch, type, description]
    FLAGS = [
      [:jobs, "--jobs N", Integer, "how many jobs to push (default #{DEFAULT_JOBS})"],
      [:duration, "--duration SECONDS", Float, "push jobs for that long instead (with --jobs: until either is done)"],
      [:seed, "--seed N", Integer, "seed of the random choices (default: random; the report shows it)"],
      [:timeout, "--timeout SECONDS", Float, "wait that long at most after the last push (default 300)"],
      [:server, "--server NAME", LimitFetchTools::SERVERS.keys, "run it on redis (the default) or valkey"]
    ].freeze

    def self.parse(argv)
      values = {jobs: nil, duration: nil, seed: Random.new_seed % 1_000_000, timeout: 300.0,
                results: File.join(ROOT, "results"), server: ENV.fetch("LIMIT_FETCH_SERVER", "redis")}
      parser(values).parse!(argv)
      values[:jobs] ||= DEFAULT_JOBS unless values[:duration]
      validate(values)
      new(**values)
    end

    def self.parser(values)
      OptionParser.new do |opts|
        opts.banner = BANNER
        FLAGS.each { |key, *flag| opts.on(*flag) { values[key] = _1 } }
        opts.on("--quick", "as --duration #{QUICK_SECONDS.to_i}: under a minute in all") do
          values[:duration] = QUICK_SECONDS
        end
        opts.on("--no-results", "write no report to chaos/results") { values[:results] = nil }
        opts.on("-h", "--help", "show this help") { exit puts(opts) || 0 }
      end
    end

    def self.validate(values)
      raise OptionParser::InvalidArgument, "--jobs must be at least 1" if values[:jobs]&.<(1)
      raise OptionParser::InvalidArgument, "--duration must be positive" if values[:duration]&.<=(0)
    end
  end
end
