# frozen_string_literal: true

# A tenant's job: at most 2 of one tenant at once, across all processes. A
# tenant's jobs beyond that wait parked while other tenants' jobs run.
class TenantJob
  include Sidekiq::Job
  include DemoRecording

  CONCURRENCY = 2

  sidekiq_options queue: "tenants", retry: false,
    limit_fetch: {key: ->(tenant, *) { tenant }, concurrency: CONCURRENCY}

  # KEYS: running per tenant, most at once per tenant, first start per
  # tenant, last start per tenant, longest wait per tenant. ARGV: tenant,
  # now, pushed at (epoch seconds).
  STARTED = <<~LUA
    local now = redis.call("HINCRBY", KEYS[1], ARGV[1], 1)
    if now > tonumber(redis.call("HGET", KEYS[2], ARGV[1]) or 0) then
      redis.call("HSET", KEYS[2], ARGV[1], now)
    end
    redis.call("HSETNX", KEYS[3], ARGV[1], ARGV[2])
    redis.call("HSET", KEYS[4], ARGV[1], ARGV[2])
    local wait = tonumber(ARGV[2]) - tonumber(ARGV[3])
    if wait > tonumber(redis.call("HGET", KEYS[5], ARGV[1]) or 0) then
      redis.call("HSET", KEYS[5], ARGV[1], wait)
    end
  LUA

  def perform(tenant, millis, pushed_at)
    recorded("tenants", millis) do
      script(STARTED, %w[demo:tenant:running demo:tenant:max demo:tenant:first demo:tenant:last demo:tenant:wait],
        [tenant, Time.now.to_f, pushed_at])
    end
  ensure
    script("redis.call('HINCRBY', KEYS[1], ARGV[1], -1)", ["demo:tenant:running"], [tenant])
  end
end
