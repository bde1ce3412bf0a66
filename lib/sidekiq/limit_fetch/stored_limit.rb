# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # A limit as Redis holds it (Native#stored_limits): +kind+ :limit or
    # :process_limit, its +key+, and +raw+, the stored text (nil when unset),
    # which may not be a number if it was set by hand.
    StoredLimit = Data.define(:queue, :kind, :key, :raw)
  end
end
