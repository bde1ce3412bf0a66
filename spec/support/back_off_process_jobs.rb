# frozen_string_literal: true

require "sidekiq"
require "time"

# Loaded by the `sidekiq` processes of spec/integration/back_off_processes_spec.rb
# (LF_TEST_REQUIRE): a tenant's job that backs off on its first run as told,
# and records, from inside, each run's start: the time, its jid and the
# retry_count its payload had.
module BackOffProcessJobs
  QUEUE = "backing_e2e"

  def self.starts_key(tenant) = "back_off_e2e:starts:#{tenant}"

  # Records each run of a job (server middleware): when it started, its jid
  # and its payload's retry_count ("-" without one).
  class Record
    include Sidekiq::ServerMiddleware

    def call(_instance, job, _queue)
      tenant = job["args"].first
      now = Process.clock_gettime(Process::CLOCK_REALTIME)
      Sidekiq.redis do |conn|
        conn.call("RPUSH", BackOffProcessJobs.starts_key(tenant),
          "#{now.round(6)} #{job["jid"]} #{job.fetch("retry_count", "-")}")
      end
      yield
    end
  end

  # A client's 429, carrying the header's value as Faraday's error does.
  class TooManyRequests < StandardError
    attr_reader :response

    def initialize(retry_after)
      @response = {status: 429, headers: {"retry-after" => retry_after}}
      super("429 Too Many Requests")
    end
  end

  # perform(tenant, how, seconds): how "none", "seconds:<n>", "date:<n>"
  # (an HTTP-date n seconds ahead), "listed:<n>" (a TooManyRequests with
  # Retry-After n, which back_off_on lists) or "unlisted" (a RuntimeError)
  # on the first run.
  class TenantJob
    include Sidekiq::Job

    sidekiq_options queue: QUEUE, retry: 3,
      limit_fetch: {key: ->(tenant, *) { tenant }, concurrency: 5, back_off_on: [TooManyRequests]}

    def perform(tenant, how, seconds)
      kind, amount = how.split(":")
      first = Sidekiq.redis { |conn| conn.call("SET", "back_off_e2e:ran:#{jid}", "1", "NX") } == "OK"
      if first && kind == "seconds"
        raise Sidekiq::LimitFetch::BackOff.new(retry_after: Float(amount))
      elsif first && kind == "date"
        raise Sidekiq::LimitFetch::BackOff.new(retry_after: (Time.now + Float(amount)).httpdate)
      elsif first && kind == "listed"
        raise TooManyRequests, amount
      elsif first && kind == "unlisted"
        raise "not a back-off"
      end

      sleep seconds
      Sidekiq.redis { |conn| conn.call("HSET", "back_off_e2e:done", jid, tenant) }
    end
  end
end

Sidekiq.configure_server do |config|
  config.server_middleware { |chain| chain.prepend BackOffProcessJobs::Record }
end
