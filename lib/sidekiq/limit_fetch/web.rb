# frozen_string_literal: true

# The Web UI's "Limits" tab: add `require "sidekiq/limit_fetch/web"` after
# `require "sidekiq/web"` where Sidekiq::Web is mounted.
require "sidekiq/web"
require "sidekiq/limit_fetch"
require "sidekiq/limit_fetch/web/queue_field"
require "sidekiq/limit_fetch/web/change"
require "sidekiq/limit_fetch/web/resume"
require "sidekiq/limit_fetch/web/parked_counts"
require "sidekiq/limit_fetch/web/overview"
require "sidekiq/limit_fetch/web/helpers"
require "sidekiq/limit_fetch/web/extension"

Sidekiq::Web.configure do |config|
  config.register_extension(Sidekiq::LimitFetch::Web,
    name: "limit_fetch", tab: "LimitFetch", index: "limits",
    root_dir: Sidekiq::LimitFetch::Web::ROOT, asset_paths: ["css"])
end
