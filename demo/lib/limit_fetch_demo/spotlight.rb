# frozen_string_literal: true

module LimitFetchDemo
  # What the demo is about, read from Redis as it runs: the hot tenant's
  # jobs running and parked (the gem's parked list of its key limit), the
  # other tenants' jobs started, and the rated class's starts as the gem
  # counts them (its starts sorted set, scored by Redis's clock, each start
  # kept there for the rate's period at least, so that a read every
  # Watch::POLL misses none); then, at the end, what the jobs recorded (see
  # demo/app/app.rb).
  class Spotlight
    # A reading: now (running, parked), the most parked seen so far, the
    # other tenants' jobs started so far, the rated starts within the last
    # period.
    Now = Data.define(:hot_running, :hot_parked, :most_hot_parked, :others_started, :rated_parked, :rated_recent)

    def initialize(plan)
      @plan = plan
      @hot_parked_key = Sidekiq::LimitFetch::Keys.parked(hot_limit)
      @rated_parked_key = Sidekiq::LimitFetch::Keys.parked(rated_limit)
      @starts_key = Sidekiq::LimitFetch::Keys.job_starts(rated_limit)
      @starts = {}
      @most_hot_parked = 0
    end

    def hot_limit = Sidekiq::LimitFetch::JobLimitId.of_key("TenantJob", Plan::HOT_TENANT)

    def rated_limit = Sidekiq::LimitFetch::JobLimitId.of_class("RatedJob")

    def sample
      running, parked, first, rated_parked, starts = fetch(
        ["HGET", "demo:tenant:running", Plan::HOT_TENANT], ["LLEN", @hot_parked_key],
        %w[HKEYS demo:tenant:first], ["LLEN", @rated_parked_key], ["ZRANGE", @starts_key, 0, -1, "WITHSCORES"]
      )
      # RESP3 gives [[member, score], ...], RESP2 [member, score, ...].
      starts.flatten.each_slice(2) { |member, score| @starts[member] = Float(score) / 1e6 }
      @most_hot_parked = [@most_hot_parked, parked].max
      Now.new(hot_running: running.to_i, hot_parked: parked, most_hot_parked: @most_hot_parked,
        others_started: first.count { _1 != Plan::HOT_TENANT }, rated_parked: rated_parked,
        rated_recent: recent_starts)
    end

    # The rated class's starts, in seconds by Redis's clock, in order.
    def rated_starts = @starts.values.sort

    # What the jobs recorded, once they are done: per tenant the most at
    # once, the first and last start and the longest wait from push to
    # start; the jids run more than once; and the jobs in Sidekiq's retry,
    # scheduled and dead sets.
    def final
      max, first, last, wait, runs = fetch(*%w[max first last wait].map { ["HGETALL", "demo:tenant:#{_1}"] },
        %w[HVALS demo:runs])
      {max: numbers(max), first: numbers(first), last: numbers(last), wait: numbers(wait),
       run_twice: runs.count { _1.to_i > 1 },
       sets: {"retry" => Sidekiq::RetrySet.new.size, "scheduled" => Sidekiq::ScheduledSet.new.size,
              "dead" => Sidekiq::DeadSet.new.size}}
    end

    private

    def recent_starts
      latest = @starts.values.max or return 0
      @starts.values.count { latest - _1 < RatedJob::RATE[:period] }
    end

    def numbers(reply)
      (reply.is_a?(Hash) ? reply : reply.each_slice(2).to_h).transform_values(&:to_f)
    end

    def fetch(*commands)
      Sidekiq.redis { |conn| conn.pipelined { |pipe| commands.each { pipe.call(*_1) } } }
    end
  end
end
