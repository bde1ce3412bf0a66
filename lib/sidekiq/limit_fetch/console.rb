# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # The console API: queues, job limits and capsules, read and changed from
    # any process with no capsule of its own (see Queue and JobLimit). It
    # talks to the Redis of Sidekiq's client (Sidekiq.default_configuration).
    @admins = {}
    @admin_lock = Mutex.new

    class << self
      # The queue named +name+ (a Queue).
      def queue(name)
        Queue.new(name)
      end

      # Every queue worth showing, sorted by name: Sidekiq's queues, those
      # with a stored limit, a pause or busy slots, and those a live capsule
      # serves.
      def queues
        require "sidekiq/api"
        names = Sidekiq::Queue.all.map(&:name) + admin.known_queues
        names += capsules.reject(&:expired?).flat_map(&:queues)
        names.uniq.sort.map { |name| queue(name) }
      end

      # The registered capsules (RegisteredCapsule), sorted by identity,
      # expired ones included.
      def capsules
        RegisteredCapsule.all(admin)
      end

      # A job class's limit, or with +key:+ one key's (a JobLimit).
      def job_limit(job_class, key: nil, queue: nil)
        JobLimit.for(job_class, key: key, queue: queue)
      end

      # Every job limit with running or parked jobs (JobLimits).
      def job_limits
        JobLimit.active
      end

      # Every job the gem holds outside Sidekiq's queues (parked, or in
      # progress in a capsule that is not alive) back at the front of its
      # queue, each once: the way out of the gem (a ReleaseAll::Result).
      # Raises ReleaseAll::LiveCapsules, doing nothing, while capsules are
      # registered and beating, unless +force+ (their processes are being
      # stopped anyway; their own jobs are left to them).
      def release_all(force: false)
        ReleaseAll.run(admin, force: force, max_recoveries: configuration.fetch(:max_recoveries))
      end

      # The data format the fleet writes and reads in (a DataFormat): 1 or
      # 2, since when, pinned or not, and each live capsule's highest.
      def data_format
        DataFormat.read(admin)
      end

      # 1 pins data format 1 (the first step of a rollback to a release
      # that reads format 1 alone) and converts format 2's data back; :auto
      # unpins it: the census decides again. ArgumentError for anything else.
      def data_format=(value)
        DataFormat.set(admin, value)
      end

      # The capsule-free limits administration (NativeAdmin) on the Redis
      # of +config+ (a Sidekiq::Config or capsule; default: Sidekiq's
      # client's), one per Redis, each opened on first use.
      def admin(config = Sidekiq.default_configuration)
        settings = RedisOptions.for(config)
        @admin_lock.synchronize { @admins[settings] ||= NativeAdmin.new(settings) }
      end
    end
  end
end
