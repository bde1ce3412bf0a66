# frozen_string_literal: true

# A call to a partner's API that allows 20 calls a second: at most 20 starts
# of the class in any 1 s, across all processes. Jobs over the rate wait
# parked until its window has room.
class RatedJob
  include Sidekiq::Job
  include DemoRecording

  RATE = {limit: 20, period: 1}.freeze

  sidekiq_options queue: "partner_api", retry: false, limit_fetch: {rate: RATE}

  def perform(millis) = recorded("partner_api", millis)
end
