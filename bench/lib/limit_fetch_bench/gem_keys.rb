# frozen_string_literal: true

module LimitFetchBench
  # The gem's Redis keys the measuring processes read and write, named by
  # the gem under measure: its Sidekiq::LimitFetch::Keys, the core's data
  # model. A baseline older than Keys (bin/bench --baseline) has none; it
  # names its keys the same (the data model is sidekiq-limit_fetch v5's, and
  # has not changed), spelled below for it alone.
  GemKeys =
    if defined?(Sidekiq::LimitFetch::Keys)
      Sidekiq::LimitFetch::Keys
    else
      Module.new do
        const_set(:PREFIX, "sidekiq:limit_fetch:")
        const_set(:PARKED, "sidekiq:limit_fetch:parked")

        module_function

        def limit(queue) = "sidekiq:limit_fetch:queue:#{queue}:limit"

        def busy(queue) = "sidekiq:limit_fetch:queue:#{queue}:busy"

        def in_progress(uuid, queue) = "sidekiq:limit_fetch:capsule:#{uuid}:inprogress:#{queue}"

        def parked(id) = "sidekiq:limit_fetch:limit:#{id}:parked"
      end
    end
end
