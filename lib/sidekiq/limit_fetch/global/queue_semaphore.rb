# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    module Global
      # Reads and changes one queue's limits at run time; the next fetch, in
      # every process, obeys the change.
      #
      #   queue = Sidekiq::LimitFetch::Global::QueueSemaphore.new(capsule, "webhooks")
      #   queue.limit = 5
      #   queue.process_limit = nil # removes it
      class QueueSemaphore
        attr_reader :name

        def initialize(capsule, name)
          @capsule = capsule
          @name = name.to_s
        end

        def limit
          native.limit(name, :limit)
        end

        def limit=(value)
          native.set_limit(name, :limit, Limits.coerce(name, value, :limit))
        end

        def process_limit
          native.limit(name, :process_limit)
        end

        def process_limit=(value)
          native.set_limit(name, :process_limit, Limits.coerce(name, value, :process_limit))
        end

        # Jobs of this queue in progress across every process.
        def busy
          native.busy(name).first
        end

        # Jobs of this queue in progress in this capsule.
        def process_busy
          native.busy(name).last
        end

        private

        def native
          LimitFetch.client(@capsule).native
        end
      end
    end
  end
end
