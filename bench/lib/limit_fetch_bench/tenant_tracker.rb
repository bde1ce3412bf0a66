# frozen_string_literal: true

module LimitFetchBench
  # Per tenant (a TenantJobs job's argument), from inside the jobs: how many
  # run at once (and the most seen), when its first job started (seconds
  # since `origin`, the start of the run), and jobs executed in all.
  class TenantTracker
    attr_reader :executed

    def initialize(origin)
      @origin = origin
      @lock = Mutex.new
      @running = Hash.new(0)
      @max = Hash.new(0)
      @first = {}
      @executed = 0
    end

    def started(tenant)
      now = LimitFetchBench.monotonic
      @lock.synchronize do
        @first[tenant] ||= now - @origin
        @max[tenant] = [@max[tenant], @running[tenant] += 1].max
        @executed += 1
      end
    end

    def finished(tenant)
      @lock.synchronize { @running[tenant] -= 1 }
    end

    # The run starts later than the tracker is made.
    def origin=(time)
      @lock.synchronize { @origin = time }
    end

    def max_running(tenant) = @lock.synchronize { @max[tenant] }

    # The most running at once of any tenant but `tenant`.
    def max_running_except(tenant) = @lock.synchronize { @max.except(tenant).values.max || 0 }

    # First starts of every tenant but `tenant`, in seconds.
    def first_starts_except(tenant) = @lock.synchronize { @first.except(tenant).values }

    # Sidekiq server middleware reporting to a TenantTracker.
    class Middleware
      include Sidekiq::ServerMiddleware

      def initialize(tracker)
        @tracker = tracker
      end

      def call(_job, payload, _queue)
        tenant = payload["args"].first
        @tracker.started(tenant)
        begin
          yield
        ensure
          @tracker.finished(tenant)
        end
      end
    end
  end
end
