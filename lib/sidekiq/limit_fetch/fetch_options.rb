# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # How an idle fetch waits: the checked :fetch_timeout and :poll_range of
    # LimitFetch.configuration.
    FetchOptions = Data.define(:fetch_timeout, :poll_range)

    class FetchOptions
      def initialize(fetch_timeout:, poll_range:)
        super(fetch_timeout: Check.seconds(:fetch_timeout, fetch_timeout), poll_range: checked_range(poll_range))
      end

      # Seconds until the next look where Redis cannot notify; drawn afresh
      # for each fetch so that the fetchers of many processes do not look in
      # step.
      def poll_pause
        rand(poll_range).to_f
      end

      private

      # A zero pause would make idle fetches loop on Redis where it refuses
      # CLIENT TRACKING.
      def checked_range(value)
        if value.is_a?(Range) && Check.seconds?(value.begin) && Check.seconds?(value.end) && value.begin <= value.end
          return value
        end

        Check.invalid(:poll_range, "a Range of positive seconds", value)
      end
    end
  end
end
