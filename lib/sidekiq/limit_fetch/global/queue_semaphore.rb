# frozen_string_literal: true

require "forwardable"

module Sidekiq
  class LimitFetch < BasicFetch
    module Global
      # v5's handle on one queue's limits, kept for compatibility: it
      # delegates to Sidekiq::LimitFetch::Queue on the capsule's Redis, and
      # sets nothing up (no registration, no thread).
      #
      #   queue = Sidekiq::LimitFetch::Global::QueueSemaphore.new(capsule, "webhooks")
      #   queue.limit = 5
      #   queue.process_limit = nil # removes it
      class QueueSemaphore
        extend Forwardable

        def_delegators :@queue, :name, :limit, :limit=, :process_limit, :process_limit=, :busy,
          :pause, :pause_for, :unpause, :paused?

        def initialize(capsule, name)
          @capsule = capsule
          @queue = Queue.new(name, admin: LimitFetch.admin(capsule))
        end

        # Jobs of this queue in progress in this capsule: none unless the
        # capsule fetches in this process.
        def process_busy
          client = LimitFetch.client?(@capsule)
          return 0 unless client

          LimitFetch.flush_acknowledgements
          @queue.state.busy.fetch(client.uuid, 0)
        end
      end
    end
  end
end
