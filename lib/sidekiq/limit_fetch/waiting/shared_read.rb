# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    class Waiting
      # One read of several queues' waiting jobs, shared by the queues
      # Sidekiq::Queue.all returns (the Web UI's Queues page asks each for its
      # size and latency): read on first use, again once older than FRESH
      # seconds, so that a queue kept for long still reads afresh.
      class SharedRead
        FRESH = 1.0

        def initialize(names)
          @names = names
          @lock = Mutex.new
        end

        # The QueueWaiting of queue +name+, with its oldest payloads.
        def [](name)
          @lock.synchronize do
            now = ::Process.clock_gettime(::Process::CLOCK_MONOTONIC)
            if @read.nil? || now - @read_at > FRESH
              @read = Waiting.read(@names, oldest: true)
              @read_at = now
            end
            @read[name]
          end
        end
      end
    end
  end
end
