# frozen_string_literal: true

require "sidekiq"
require_relative "tracked_job"

module LimitFetchSpec
  # Job classes that back off. Each stamps its starts (Recorder.stamp, under
  # "<label>") and, on its first run only, backs off as told: the specs then
  # read from the stamps when each label's jobs started.
  module BackOffJobs
    QUEUE = "backing"

    # Whether this is the first run of +jid+ (its later runs do not back off).
    def self.first_run?(jid)
      Sidekiq.redis { |conn| conn.call("SET", "limit_fetch_spec:ran:#{jid}", "1", "NX") } == "OK"
    end

    # Stamps a start under +label+, then on the first run raises what +how+
    # says: "seconds:<n>", "date:<n>" (an HTTP-date n seconds ahead),
    # "listed", "unlisted", "none" (runs through); then sleeps +seconds+.
    def self.run(job, label, how, seconds)
      Recorder.stamp(label)
      if how != "none" && first_run?(job.jid)
        kind, amount = how.split(":")
        case kind
        when "seconds" then raise Sidekiq::LimitFetch::BackOff.new(retry_after: Float(amount))
        when "date" then raise Sidekiq::LimitFetch::BackOff.new(retry_after: (Time.now + Float(amount)).httpdate)
        when "default" then raise Sidekiq::LimitFetch::BackOff
        when "listed" then raise TooManyRequests, amount
        else raise Unlisted, "not a back-off"
        end
      end
      Recorder.track(label, job.jid) { sleep seconds }
    end
  end

  # As an HTTP client's 429 error: carries the Retry-After it was given.
  class TooManyRequests < StandardError
    attr_reader :retry_after

    def initialize(retry_after)
      @retry_after = retry_after
      super("429 Too Many Requests")
    end
  end

  class Unlisted < StandardError; end

  # A downstream in Redis that admits +capacity+ calls of a tenant at once
  # and answers "429, retry after 0.1 s" beyond: perform(tenant, capacity,
  # seconds) calls it and backs off on a 429.
  class AdaptiveCallJob
    include Sidekiq::Job

    sidekiq_options retry: 1, queue: BackOffJobs::QUEUE,
      limit_fetch: {key: ->(tenant, *) { tenant }, concurrency: 1..6, back_off_on: [TooManyRequests]}

    def perform(tenant, capacity, seconds)
      label = "adaptive:#{tenant}"
      in_flight = "limit_fetch_spec:in_flight:#{tenant}"
      if Sidekiq.redis { |conn| conn.call("INCR", in_flight) } > capacity
        Sidekiq.redis do |conn|
          conn.pipelined do |pipe|
            pipe.call("DECR", in_flight)
            pipe.call("INCR", "#{label}:429")
          end
        end
        raise TooManyRequests, "0.1"
      end
      begin
        Recorder.track(label, jid) { sleep seconds }
      ensure
        Sidekiq.redis { |conn| conn.call("DECR", in_flight) }
      end
    end
  end

  # Up to 4 per tenant: perform(tenant, how, seconds).
  class TenantCallJob
    include Sidekiq::Job

    sidekiq_options retry: 1, queue: BackOffJobs::QUEUE,
      limit_fetch: {key: ->(tenant, *) { tenant }, concurrency: 4, back_off_on: [TooManyRequests]}

    def perform(tenant, how, seconds)
      BackOffJobs.run(self, "tenant:#{tenant}", how, seconds)
    end
  end

  # No limit_fetch declaration at all: perform(how, seconds), stamped under
  # its LABEL.
  class PlainCallJob
    include Sidekiq::Job

    LABEL = "plain"

    sidekiq_options retry: 1, queue: BackOffJobs::QUEUE

    def perform(how, seconds)
      BackOffJobs.run(self, self.class::LABEL, how, seconds)
    end
  end

  # Another undeclared class in the same queue.
  class OtherCallJob < PlainCallJob
    LABEL = "other"
  end
end
