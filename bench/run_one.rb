# frozen_string_literal: true

# One measuring process of bin/bench, started by the driver (bench/bench.rb)
# with its spec as JSON; prints "RESULT <json>" and exits.
$LOAD_PATH.unshift(File.join(__dir__, "lib"), File.expand_path("../lib", __dir__))
require "limit_fetch_bench"
require "limit_fetch_bench/child"

$stdout.sync = true
exit LimitFetchBench::Child.main(ARGV)
