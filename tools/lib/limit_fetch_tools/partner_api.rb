# frozen_string_literal: true

require "json"
require "net/http"
require "uri"

# A client of a partner's HTTP API (the simulated downstream's GET /call),
# written as an app's client would be: Net::HTTP with a kept-alive
# connection per thread (a Sidekiq process's threads share one client), and
# an error class per failure. A 429 raises PartnerApi::TooManyRequests,
# which carries, as Faraday's Faraday::TooManyRequestsError does, the
# `response` (a Hash: :status, :headers with lowercase names, :body) and,
# for convenience, `retry_after`: the Retry-After header's raw value
# ("0.2", "30" or an HTTP-date), nil without one.
class PartnerApi
  class Error < StandardError
    attr_reader :response

    def initialize(message = nil, response: nil)
      super(message)
      @response = response
    end
  end

  class TooManyRequests < Error
    def retry_after = response[:headers]["retry-after"]
  end

  def initialize(base_url, open_timeout: 2, read_timeout: 10)
    @uri = URI(base_url)
    @timeouts = {open_timeout:, read_timeout:}
    @key = :"partner_api_#{object_id}"
  end

  # Calls the API for `tenant`, which holds the call `millis` milliseconds;
  # the parsed body.
  def call(tenant:, millis:)
    response = connection.request(Net::HTTP::Get.new("/call?#{URI.encode_www_form(tenant:, ms: millis)}"))
    return JSON.parse(response.body) if response.is_a?(Net::HTTPSuccess)

    fail_with(response)
  end

  # Closes this thread's connection.
  def close
    Thread.current[@key]&.finish
  rescue IOError
    nil # not started
  ensure
    Thread.current[@key] = nil
  end

  private

  # This thread's connection, opened at its first call and kept alive
  # (Net::HTTP reconnects when the server closed it).
  def connection
    Thread.current[@key] ||= Net::HTTP.new(@uri.host, @uri.port).tap do |http|
      http.open_timeout = @timeouts[:open_timeout]
      http.read_timeout = @timeouts[:read_timeout]
      http.keep_alive_timeout = 30
      http.start
    end
  end

  def fail_with(response)
    details = {status: response.code.to_i, headers: response.each_header.to_h, body: response.body}
    error = response.code == "429" ? TooManyRequests : Error
    raise error.new("the partner API answered #{response.code}", response: details)
  end
end
