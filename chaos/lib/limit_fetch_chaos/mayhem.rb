# frozen_string_literal: true

module LimitFetchChaos
  # The chaos itself: every Plan::KILL_EVERY seconds a kill -9 of a random
  # Sidekiq process and a replacement for it; once, when the run is
  # Plan::RESTART_AT far, a Redis outage of Plan::REDIS_DOWN seconds
  # (SIGTERM, which makes Redis flush its AOF and exit, then the same port
  # and directory) that the processes must live through and get over by
  # themselves, not while `outage_ok` is false (a limit change is under
  # way); once, when the run is Plan::FREEZE_AT far and the outage is over,
  # a freeze (Freezer) of the process holding the most jobs for
  # Plan::FREEZE seconds. The outage first: no job is done while Redis is
  # down, so it comes amid the jobs however the run is paced (--jobs or
  # --duration), and the freeze, which the other processes work through,
  # comes after it. Says what it does (`say`: elapsed, text).
  class Mayhem
    # When Redis went down and was answering again (wall-clock ns), how many
    # seconds into the run, and the processes that ran through the outage.
    Restart = Data.define(:at, :down_from, :down_until, :through) do
      def seconds = (down_until - down_from) / 1e9
    end

    attr_reader :restart

    # `redis`: the run's RedisServer; `sidekiq`: a Sidekiq::Config to reach it.
    def initialize(plan, fleet, redis, sidekiq, say:)
      @plan = plan
      @fleet = fleet
      @redis = redis
      @sidekiq = sidekiq
      @say = say
      @next_kill = plan.kill_interval
      @freezer = Freezer.new(fleet, sidekiq, seconds: Plan::FREEZE, expiry: Plan::EXPIRY, say: say)
    end

    def act(elapsed, progress, outage_ok: true)
      return unless past_outage?(elapsed, progress, outage_ok) # nor kills meanwhile: the outage must come

      @freezer.act(elapsed)
      @freezer.start(elapsed) if freeze_due?(progress) && booted?
      # No kill while the freeze is due: it waits for a booted fleet, which
      # kills every ~2 s of processes that boot in 2 s or more (a loaded
      # machine) may not leave it before the jobs run out.
      kill(elapsed) if elapsed >= @next_kill && !freeze_due?(progress)
    end

    # The freeze, a Frozen (nil if none came).
    def frozen = @freezer.frozen

    # True while a process is frozen: the run goes on until it is woken. (A
    # fault that never came, the jobs done first, fails the report.)
    def busy? = @freezer.busy?

    # Seconds the faults have taken: the run's progress leaves them out, so
    # that jobs are pushed and run for as long after them as without them.
    def paused = @freezer.paused + (@restart&.seconds || 0)

    def stop = @freezer.stop

    private

    def booted? = @sidekiq.redis { @fleet.booted?(_1) }

    def freeze_due?(progress) = @restart && @freezer.idle? && progress >= Plan::FREEZE_AT

    # Takes Redis down once its time has come; false while the outage waits
    # for its moment.
    def past_outage?(elapsed, progress, outage_ok)
      return true unless @restart.nil? && progress >= Plan::RESTART_AT
      return false unless outage_ok && ready_for_outage?

      restart_redis(elapsed)
      true
    end

    # Sidekiq exits if Redis is down while it boots, and cannot stop cleanly
    # if Redis was down when its scheduler first cleaned up (see app.rb); not
    # the gem's doing: the outage waits until every process is past both.
    def ready_for_outage? = @fleet.older_than?(Plan::SCHEDULER_WAIT) && booted?

    def kill(elapsed)
      victim, replacement = @sidekiq.redis { @fleet.kill_one(_1) }
      @next_kill = elapsed + @plan.kill_interval
      @say.call(elapsed, "kill -9 #{victim.name} (pid #{victim.pid}), started #{replacement.name}")
    end

    def restart_redis(elapsed)
      through = @fleet.names
      down_from = LimitFetchChaos.now_ns
      @redis.stop
      hold_down
      @redis.start
      @restart = Restart.new(at: elapsed, down_from: down_from, down_until: LimitFetchChaos.now_ns, through: through)
      @say.call(elapsed, "restarted Redis (SIGTERM, then the same port and AOF): down #{@restart.seconds.round(2)} s")
    end

    # No kill meanwhile: a replacement would boot while Redis is down, when
    # Sidekiq exits (not the gem's doing). Fleet#check! fails the run if a
    # process dies of the errors.
    def hold_down
      deadline = LimitFetchChaos.monotonic + Plan::REDIS_DOWN
      while LimitFetchChaos.monotonic < deadline
        @fleet.check!
        sleep Runner::TICK
      end
    end
  end
end
