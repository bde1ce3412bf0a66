# frozen_string_literal: true

# The app bench/idle_cost.rb's Sidekiq processes load (`sidekiq -r ./app.rb`):
# nothing but Sidekiq, and with IDLE_FETCH=limit the gem, which makes every
# capsule fetch through Sidekiq::LimitFetch (else Sidekiq's BasicFetch).
# IDLE_CAPSULES=N: N capsules in all, each of the process's concurrency, all
# on the queues IDLE_QUEUES names (comma-separated; default "default").
require "sidekiq"
require "sidekiq-limit_fetch" if ENV.fetch("IDLE_FETCH") == "limit"

Sidekiq.configure_server do |config|
  (ENV.fetch("IDLE_CAPSULES", "1").to_i - 1).times do |index|
    config.capsule("idle-#{index}") do |capsule|
      capsule.concurrency = config.concurrency
      capsule.queues = ENV.fetch("IDLE_QUEUES", "default").split(",")
    end
  end
end
