# frozen_string_literal: true

# The driver of bin/bench, which first compiles the extension and then runs this.
$LOAD_PATH.unshift(File.join(__dir__, "lib"), File.expand_path("../lib", __dir__))
require "limit_fetch_bench"
require_relative "../tools/lib/limit_fetch_tools/boot"

LimitFetchTools::Boot.run("bin/bench", LimitFetchBench::Options) { LimitFetchBench::Runner.new(_1).run }
