# frozen_string_literal: true

# One measuring process of bin/bench, started by the driver (bench/bench.rb)
# with its spec as JSON; prints "RESULT <json>" and exits. It loads the gem
# from this checkout's lib/, or from the spec's "lib" (bin/bench --baseline).
require "json"
gem_lib = JSON.parse(ARGV.fetch(0))["lib"] || File.expand_path("../lib", __dir__)
$LOAD_PATH.unshift(File.join(__dir__, "lib"), gem_lib)
require "limit_fetch_bench"
require "limit_fetch_bench/child"

$stdout.sync = true
exit LimitFetchBench::Child.main(ARGV)
