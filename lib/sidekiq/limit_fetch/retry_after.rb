# frozen_string_literal: true

require "time"

module Sidekiq
  class LimitFetch < BasicFetch
    # How long to back off, read from what a job has at hand: seconds (a
    # Numeric), an HTTP Retry-After value (delta-seconds, or an HTTP-date,
    # RFC 9110 section 10.2.3), a Time, or nil (the default then applies:
    # see BackOff). The longest is a week, as a rate's period.
    module RetryAfter
      LONGEST = Rates::MAX_PERIOD
      DELTA_SECONDS = /\A\s*(\d+(?:\.\d+)?)\s*\z/

      module_function

      # Seconds (a Float, 0 for a date already past), or nil for nil.
      # Anything else raises ArgumentError, naming it.
      def seconds(value, now: Time.now)
        return if value.nil?

        seconds = value.is_a?(Numeric) ? value.to_f : until_then(value, now)
        invalid(value) unless seconds.finite? && seconds <= LONGEST && (seconds >= 0 || !value.is_a?(Numeric))
        [seconds, 0.0].max
      end

      # Seconds until a Time, or a Retry-After header's value.
      def until_then(value, now)
        return value - now if value.is_a?(Time)

        value.is_a?(String) ? from_header(value, now) : invalid(value)
      end

      # The Retry-After an error carries, as +seconds+ reads it, or nil: its
      # own #retry_after, else the header of the response it holds (as
      # Faraday's errors and Net::HTTP's responses hold them).
      def of_error(error)
        return seconds(error.retry_after) if error.respond_to?(:retry_after)

        header = header_of(error.response) if error.respond_to?(:response)
        seconds(header) if header
      end

      def from_header(text, now)
        delta = DELTA_SECONDS.match(text)
        return delta[1].to_f if delta

        Time.httpdate(text.strip) - now
      rescue ArgumentError
        invalid(text)
      end

      def header_of(response)
        headers = response.is_a?(Hash) ? (response[:headers] || response["headers"]) : response
        headers = headers.headers if headers.respond_to?(:headers) && !headers.respond_to?(:[])
        return unless headers.respond_to?(:[])

        headers["Retry-After"] || headers["retry-after"]
      end

      def invalid(value)
        raise ArgumentError, "sidekiq-limit_fetch: retry_after #{value.inspect[0, 80]} is not a number of seconds " \
                             "(0 to #{LONGEST}), a Retry-After header value (delta-seconds or an HTTP-date) or a Time"
      end
    end
  end
end
