# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # Raised from a job's perform when what its limit protects says "too
    # many requests": the job does not fail (no retry, no error handler, no
    # failure in Sidekiq's stats); it goes back parked, first in line, and
    # for +retry_after+ seconds no process starts a job of its limit, while
    # every other job runs on.
    #
    #   rescue Partner::TooManyRequests => e
    #     raise Sidekiq::LimitFetch::BackOff.new(retry_after: e.retry_after)
    #
    # The limit is the job's narrowest: its key's if it has one, else its
    # class's (a class that declares no limit backs off as a class). A
    # back-off while one holds extends it, never shortens it.
    #
    # +retry_after+: seconds, a Retry-After header's value (delta-seconds or
    # an HTTP-date), a Time, or nil: then 1 second, doubled with each
    # back-off of the same limit that comes within a minute of the last
    # one's end, up to 60 (see RetryAfter, src/lua/back_off.lua).
    class BackOff < StandardError
      attr_reader :retry_after

      def initialize(message = nil, retry_after: nil)
        @retry_after = RetryAfter.seconds(retry_after)
        super(message || (@retry_after ? "back off for #{@retry_after.round(3)} s" : "back off"))
      end
    end
  end
end
