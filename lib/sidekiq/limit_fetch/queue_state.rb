# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # One queue as Redis holds it, read in one round trip
    # (NativeLimits#queue_states): its limits as the fetch reads them (nil:
    # none; a broken value reads as 0), +busy+ slots by capsule UUID
    # ({uuid => count}), +queued+ jobs in Sidekiq's list, whether it is
    # +paused+, and the seconds its pause has left (+pause_left+; nil when
    # paused until unpaused, or not paused).
    QueueState = Data.define(:name, :limit, :process_limit, :busy, :queued, :paused, :pause_left)
  end
end
