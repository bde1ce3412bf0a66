# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    module Web
      # The jobs parked at a full job limit, counted by the queue each goes
      # back to: a queue whose jobs all wait parked has none queued, yet
      # jobs waiting. One read of every queue with parked jobs (Waiting),
      # bounded by Waiting::BUDGET: beyond it, a limit's parked jobs are
      # counted for the queue of its oldest (#complete? is false).
      class ParkedCounts
        # Counts on the Redis of +config+ (Sidekiq's client's by default,
        # as the console API).
        def self.read(config = Sidekiq.default_configuration)
          waiting = Waiting.read(admin: LimitFetch.admin(config))
          new(waiting.queues.to_h { [_1.name, _1.parked] }, complete: !waiting.estimated?)
        end

        def initialize(counts, complete: true)
          @counts = counts
          @complete = complete
        end

        # Parked jobs of queue +name+.
        def [](name)
          @counts.fetch(name, 0)
        end

        def complete? = @complete
      end
    end
  end
end
