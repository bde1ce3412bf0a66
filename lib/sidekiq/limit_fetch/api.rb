# frozen_string_literal: true

require "sidekiq/api"
require "sidekiq/limit_fetch/waiting"
require "sidekiq/limit_fetch/waiting/shared_read"
require "sidekiq/limit_fetch/api/queue_waiting"
require "sidekiq/limit_fetch/api/stats_waiting"

# Sidekiq's API (and so its Web UI and the autoscalers that read it) counts
# the jobs parked at their job limits as waiting in their queues: see
# LimitFetch::Waiting, and :count_parked_as_waiting to turn it off.
Sidekiq::Queue.prepend(Sidekiq::LimitFetch::Api::QueueWaiting)
Sidekiq::Queue.singleton_class.prepend(Sidekiq::LimitFetch::Api::QueuesWaiting)
Sidekiq::Stats.prepend(Sidekiq::LimitFetch::Api::StatsWaiting)
