# frozen_string_literal: true

require_relative "options"

module LimitFetchTools
  # How bin/bench's, bin/chaos's and bin/demo's drivers open (each run by
  # bin/lib/ruby_driver.bash once the extension is built): output
  # unbuffered, the tool's options parsed (a bad one: its message, exit 2),
  # then the block's run on them, whose value is the exit status.
  module Boot
    module_function

    # `tool`: "bin/bench"...; `options`: the tool's Options (its .parse).
    def run(tool, options, argv = ARGV)
      $stdout.sync = true
      parsed = begin
        options.parse(argv)
      rescue OptionParser::ParseError => e
        warn "#{tool}: #{e.message} (see #{tool} --help)"
        exit 2
      end
      exit yield(parsed)
    end
  end
end
