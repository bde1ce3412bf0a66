# frozen_string_literal: true

# The driver of bin/demo, which first compiles the extension and then runs this.
$LOAD_PATH.unshift(File.join(__dir__, "lib"))
require "limit_fetch_demo"

$stdout.sync = true

begin
  options = LimitFetchDemo::Options.parse(ARGV)
rescue OptionParser::ParseError => e
  warn "bin/demo: #{e.message} (see bin/demo --help)"
  exit 2
end
exit LimitFetchDemo::Runner.new(options).run
