# frozen_string_literal: true

# The driver of bin/bench, which first compiles the extension and then runs this.
$LOAD_PATH.unshift(File.join(__dir__, "lib"), File.expand_path("../lib", __dir__))
require "limit_fetch_bench"

$stdout.sync = true

begin
  options = LimitFetchBench::Options.parse(ARGV)
rescue OptionParser::ParseError => e
  warn "bin/bench: #{e.message} (see bin/bench --help)"
  exit 2
end
exit LimitFetchBench::Runner.new(options).run
