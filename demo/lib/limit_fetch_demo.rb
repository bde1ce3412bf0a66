# frozen_string_literal: true

require "fileutils"
require "forwardable"
require "open3"
require "optparse"
require "tmpdir"
require "yaml"
require_relative "../../tools/lib/limit_fetch_tools"

# bin/demo: two Sidekiq processes on their own Redis, running jobs through
# sidekiq-limit_fetch-rs, watched live. Sidekiq itself is loaded only once the
# demo app's bundle is installed (App#load_bundle).
module LimitFetchDemo
  REPO = File.expand_path("../..", __dir__)

  # A failure the demo explains itself (LimitFetchTools' own, so that the
  # Redis it starts fails alike); it ends the demo with status 1.
  Failure = LimitFetchTools::Failure

  module_function

  def monotonic = LimitFetchTools.monotonic
end

require "limit_fetch_demo/options"
require "limit_fetch_demo/columns"
require "limit_fetch_demo/sidekiq_config"
require "limit_fetch_demo/plan"
require "limit_fetch_demo/app"
require "limit_fetch_demo/workers"
require "limit_fetch_demo/stats"
require "limit_fetch_demo/view"
require "limit_fetch_demo/watch"
require "limit_fetch_demo/web_ui"
require "limit_fetch_demo/screenshot"
require "limit_fetch_demo/spotlight"
require "limit_fetch_demo/spotlight_summary"
require "limit_fetch_demo/summary"
require "limit_fetch_demo/runner"
