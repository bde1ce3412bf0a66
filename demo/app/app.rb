# frozen_string_literal: true

# The app that bin/demo's Sidekiq processes load (`sidekiq -r ./app.rb`);
# bin/demo loads it too, to push the jobs (the gem's client middleware works
# out their job limits at push). Its jobs record in Redis, while they run,
# what bin/demo shows (see demo/lib/limit_fetch_demo/stats.rb).
require "sidekiq"
require "sidekiq-limit_fetch"

require_relative "demo_recording"
require_relative "demo_job"
require_relative "tenant_job"
require_relative "rated_job"
