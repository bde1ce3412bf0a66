# frozen_string_literal: true

# The app that bin/chaos's Sidekiq processes load (`sidekiq -r ./app.rb`); it
# stands for a Rails app's initializer.
require "sidekiq"
require "sidekiq-limit_fetch"
require_relative "chaos_job"

Sidekiq.configure_server do |_config|
  # Short, so that the capsule of a killed process is reaped within seconds
  # (once silent for 4 periods). bin/chaos chooses it (Plan::HEARTBEAT_PERIOD).
  Sidekiq::LimitFetch.configuration[:heartbeat_period] = Float(ENV.fetch("CHAOS_HEARTBEAT_PERIOD"))
end
