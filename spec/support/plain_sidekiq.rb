# frozen_string_literal: true

# What a `sidekiq` process of an app that removed the gem requires: Sidekiq
# and the job classes, not sidekiq-limit_fetch (Sidekiq fetches with its
# BasicFetch). Says so in its log at startup.
require "sidekiq"
require_relative "rollback_jobs"

Sidekiq.configure_server do |config|
  config.on(:startup) do
    config.logger.info("plain sidekiq: limit_fetch loaded: #{!defined?(Sidekiq::LimitFetch).nil?}")
  end
end
