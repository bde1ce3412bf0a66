# frozen_string_literal: true

require "sidekiq/api"

module Sidekiq
  class LimitFetch < BasicFetch
    # The console API: queues, job limits and capsules, read and changed from
    # any process with no capsule of its own (see Queue and JobLimit). It
    # talks to the Redis of Sidekiq's client (Sidekiq.default_configuration).
    class << self
      # The queue named +name+ (a Queue).
      def queue(name)
        Queue.new(name)
      end

      # Every queue worth showing, sorted by name: Sidekiq's queues, those
      # with a stored limit, a pause or busy slots, and those a live capsule
      # serves.
      def queues
        names = Sidekiq::Queue.all.map(&:name) + admin.known_queues
        names += capsules.reject(&:expired?).flat_map(&:queues)
        names.uniq.sort.map { |name| queue(name) }
      end

      # The registered capsules (RegisteredCapsule), sorted by identity,
      # expired ones included.
      def capsules
        admin.capsules.map { |entry| RegisteredCapsule.from(entry) }.sort_by { |c| [c.label, c.name.to_s, c.uuid] }
      end

      # A job class's limit, or with +key:+ one key's (a JobLimit).
      def job_limit(job_class, key: nil, queue: nil)
        JobLimit.for(job_class, key: key, queue: queue)
      end

      # Every job limit with running or parked jobs (JobLimits).
      def job_limits
        JobLimit.active
      end

      # The capsule-free limits administration (NativeLimits) on the Redis
      # of Sidekiq's client, opened on first use.
      def admin
        @admin ||= NativeLimits.new(RedisOptions.for(Sidekiq.default_configuration))
      end
    end
  end
end
