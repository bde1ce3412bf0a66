# frozen_string_literal: true

module LimitFetchDemo
  # Command-line options of bin/demo.
  Options = Data.define(:jobs, :timeout) do
    def self.parse(argv)
      values = {jobs: 500, timeout: 120.0}
      parser(values).parse!(argv)
      raise OptionParser::InvalidArgument, "--jobs must be at least 1" unless values[:jobs].positive?

      new(**values)
    end

    def self.parser(values)
      OptionParser.new do |opts|
        opts.banner = "Usage: bin/demo [options]\n\nRuns jobs on two Sidekiq processes through " \
                      "sidekiq-limit_fetch-rs and checks that the limits held.\n\n"
        opts.on("--jobs N", Integer, "how many jobs to run (default: #{values[:jobs]})") { values[:jobs] = _1 }
        opts.on("--timeout SECONDS", Float, "give up after that long (default: #{values[:timeout]})") do |seconds|
          values[:timeout] = seconds
        end
        opts.on("-h", "--help", "show this help") { exit puts(opts) || 0 }
      end
    end
  end
end
