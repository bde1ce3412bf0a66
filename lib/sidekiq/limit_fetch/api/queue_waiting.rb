# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    module Api
      # Prepended to Sidekiq::Queue: a queue's size and latency count the
      # jobs parked at their job limits (or behind their rates) with those
      # in its list (Waiting), each in one round trip, unless
      # :count_parked_as_waiting is false.
      module QueueWaiting
        # The jobs in the queue's list and those parked for it.
        def size
          return super if @limit_fetch_listing || !Waiting.counted?

          Waiting.queue(name).size
        end

        # The age of the queue's oldest waiting job, parked ones included.
        def latency
          return super unless Waiting.counted?

          Waiting.queue(name, oldest: true).latency
        end

        # Sidekiq pages through the list by its length: the list's own.
        def each(&)
          @limit_fetch_listing = true
          super
        ensure
          @limit_fetch_listing = false
        end
      end
    end
  end
end
