# frozen_string_literal: true

# The driver of bin/demo, which first compiles the extension and then runs this.
$LOAD_PATH.unshift(File.join(__dir__, "lib"))
require "limit_fetch_demo"
require_relative "../tools/lib/limit_fetch_tools/boot"

LimitFetchTools::Boot.run("bin/demo", LimitFetchDemo::Options) { LimitFetchDemo::Runner.new(_1).run }
