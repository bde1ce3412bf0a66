# frozen_string_literal: true

module LimitFetchChaos
  # What the rates' checks (RatesChecks) saw, as it goes to the report.
  class RatesReport < RatesChecks
    # id => its windows, its longest wait with jobs parked and none of its
    # runs begun within a period, and in how many samples jobs were parked.
    def to_h
      @windows.to_h do |seen|
        wait = @waits.fetch("rate #{seen.id}")
        [seen.id, seen.to_h.merge(longest_wait_s: wait[:seconds], parked_samples: wait[:waiting],
          samples: wait[:samples], stall_after_s: Stalls::RATE_STALL)]
      end
    end
  end
end
