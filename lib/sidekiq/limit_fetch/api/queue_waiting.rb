# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    module Api
      # Prepended to Sidekiq::Queue: a queue's size and latency count the
      # jobs parked at their job limits (or behind their rates) with those
      # in its list (Waiting), each in one round trip (the queues of
      # Queue.all share one: QueuesWaiting), unless :count_parked_as_waiting
      # is false.
      module QueueWaiting
        # The jobs in the queue's list and those parked for it.
        def size
          return super if @limit_fetch_listing || !Waiting.counted?

          limit_fetch_waiting.size
        end

        # The age of the queue's oldest waiting job, parked ones included.
        def latency
          return super unless Waiting.counted?

          limit_fetch_waiting(oldest: true).latency
        end

        # Sidekiq pages through the list by its length: the list's own.
        def each(&)
          @limit_fetch_listing = true
          super
        ensure
          @limit_fetch_listing = false
        end

        # Reads through +shared+ (a Waiting::SharedRead) from now on.
        def limit_fetch_share(shared)
          @limit_fetch_shared = shared
          self
        end

        private

        def limit_fetch_waiting(oldest: false)
          @limit_fetch_shared ? @limit_fetch_shared[name] : Waiting.queue(name, oldest: oldest)
        end
      end

      # Prepended to Sidekiq::Queue's class: the queues Queue.all returns
      # share one read of their waiting jobs (Waiting::SharedRead).
      module QueuesWaiting
        def all
          queues = super
          return queues unless Waiting.counted?

          shared = Waiting::SharedRead.new(queues.map(&:name))
          queues.each { _1.limit_fetch_share(shared) }
        end
      end
    end
  end
end
