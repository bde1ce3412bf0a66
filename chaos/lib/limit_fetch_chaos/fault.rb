# frozen_string_literal: true

module LimitFetchChaos
  # The one fault of bin/chaos --fault (FaultPlan#fault, a FaultSpec), lifted
  # SECONDS after it began:
  #
  # - redis-restart: SHUTDOWN (Redis fsyncs its AOF and exits), then the
  #   same port and directory; whatever Redis acknowledged comes back;
  # - redis-stop: SIGSTOP of redis-server, then SIGCONT: connections stay
  #   open, nothing answers, and Redis's clock jumps by SECONDS when it
  #   goes on (keys whose TTL ran out meanwhile expire at once);
  # - freeze: SIGSTOP of the Sidekiq process that holds the most jobs, one
  #   of each queue at least, then SIGCONT (Freezer).
  #
  # It comes once every process is past booting and its scheduler's first
  # cleanup (see Mayhem: Redis errors then are Sidekiq's to die of, not the
  # gem's), and, for Redis's faults, while every process holds jobs (for a
  # freeze, while one holds jobs of every queue), or, after SHARED_WITHIN
  # seconds, while any does: a process that keeps a limited queue busy
  # keeps its slots, so one may hold them all for long.
  class Fault
    # Seconds to wait for the moment to come before giving up.
    READY_WITHIN = 90
    SHARED_WITHIN = 20

    # A Mayhem::Restart once Redis's fault is over (nil for a freeze).
    attr_reader :restart

    def initialize(plan, fleet, redis, sidekiq, say:)
      @plan = plan
      @spec = plan.fault
      @fleet = fleet
      @redis = redis
      @sidekiq = sidekiq
      @say = say
      @freezer = Freezer.new(fleet, sidekiq, seconds: @spec.seconds, expiry: Plan::EXPIRY, say: say)
    end

    # The freeze, a Frozen (nil for Redis's faults, or before it).
    def frozen = @freezer.frozen

    def redis_down? = !@down.nil?

    # When the fault was lifted (monotonic seconds), nil before.
    attr_reader :over_at

    def act(elapsed)
      return lift(elapsed) if @down
      return thaw(elapsed) if @freezer.busy?
      return if @over_at || !@freezer.idle?

      inject(elapsed)
    end

    # Lifts the fault if the run is cut short.
    def stop
      @freezer.stop
      @redis.resume if @down && @spec.kind == "redis-stop"
    end

    private

    def inject(elapsed)
      return unless ready?(elapsed)

      late = elapsed - @since > SHARED_WITHIN
      return @freezer.start(elapsed, queues: late ? [] : @plan.queues) if @spec.kind == "freeze"

      take_redis_down(elapsed) if running?(late)
    end

    # Every process holds jobs (`late`: any does).
    def running?(late)
      holding = @sidekiq.redis { @fleet.holding(_1) }.values
      late ? holding.any?(&:any?) : holding.all?(&:any?)
    end

    # Every process past booting and its scheduler's first cleanup.
    def ready?(elapsed)
      @since ||= elapsed
      raise Failure, "no moment for --fault #{@spec} came within #{READY_WITHIN} s" if elapsed - @since > READY_WITHIN

      @fleet.older_than?(Plan::SCHEDULER_WAIT) && @sidekiq.redis { @fleet.booted?(_1) }
    end

    def take_redis_down(elapsed)
      @down = {at: elapsed, from: LimitFetchChaos.now_ns, through: @fleet.names,
               until: LimitFetchChaos.monotonic + @spec.seconds}
      @spec.kind == "redis-stop" ? @redis.pause : @redis.shutdown
      @say.call(elapsed, @spec.kind == "redis-stop" ? "stopped Redis (SIGSTOP)" : "shut Redis down (SHUTDOWN)")
    end

    def lift(elapsed)
      return if LimitFetchChaos.monotonic < @down[:until]

      @spec.kind == "redis-stop" ? @redis.resume : @redis.start
      @restart = Mayhem::Restart.new(at: @down[:at], down_from: @down[:from], down_until: LimitFetchChaos.now_ns,
        through: @down[:through])
      @down = nil
      @over_at = LimitFetchChaos.monotonic
      @say.call(elapsed, "Redis back (#{@spec.kind == "redis-stop" ? "SIGCONT" : "started again, same port and AOF"})" \
                         ": down #{@restart.seconds.round(2)} s")
    end

    def thaw(elapsed)
      @freezer.act(elapsed)
      @over_at = LimitFetchChaos.monotonic if @freezer.done?
    end
  end
end
