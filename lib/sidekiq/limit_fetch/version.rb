# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    VERSION = "0.1.0"
  end
end
