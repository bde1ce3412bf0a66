# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # A fetched job, in its capsule's in-progress list and holding a busy slot
    # of its queue until it is acknowledged or pushed back.
    class UnitOfWork < BasicFetch::UnitOfWork
      def acknowledge
        LimitFetch.client(config).acknowledge(queue_name, job)
      end

      def requeue
        LimitFetch.client(config).requeue([self])
      end
    end
  end
end
