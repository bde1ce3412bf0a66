# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # A fetched job, in its capsule's in-progress list and holding a busy slot
    # of its queue until it is acknowledged or pushed back.
    #
    # Sidekiq names a queue by its list, "queue:<name>" (queues_cmd, #queue);
    # the core, its Redis keys and its scripts by the bare name (#queue_name).
    # The gem takes the prefix off here, on the way in, and puts it back on
    # here, on the way out (Sidekiq's #queue_name takes it off again): nowhere
    # else. The prefix is the core's (Keys::QUEUE_PREFIX).
    class UnitOfWork < BasicFetch::UnitOfWork
      PREFIX = Keys::QUEUE_PREFIX

      # Bare queue names from Sidekiq's list names.
      def self.queue_names(lists)
        lists.map { |list| list.delete_prefix(PREFIX) }
      end

      def self.fetched(queue_name, job, config)
        new("#{PREFIX}#{queue_name}", job, config)
      end

      # Finished, or backed off (PendingBackOff): then parked instead.
      def acknowledge
        back_off = PendingBackOff.take(job)
        return LimitFetch.client(config).back_off(queue_name, job, back_off) if back_off

        LimitFetch.client(config).acknowledge(queue_name, job)
      end

      def requeue
        LimitFetch.client(config).requeue([self])
      end
    end
  end
end
