# frozen_string_literal: true

module LimitFetchChaos
  # The chaos itself: every Plan::KILL_EVERY seconds a kill -9 of a random
  # Sidekiq process and a replacement for it; once, when the run is
  # Plan::RESTART_AT far, a Redis restart (SIGTERM, which makes Redis flush
  # its AOF and exit, then the same port and directory) that the processes
  # must get over by themselves. Says what it does (`say`: elapsed, text).
  class Mayhem
    # When Redis went down and was answering again (wall-clock ns), and how
    # many seconds into the run.
    Restart = Data.define(:at, :down_from, :down_until) do
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
    end

    def act(elapsed, progress)
      if @restart.nil? && progress >= Plan::RESTART_AT
        return unless booted? # nor kills meanwhile: the restart must come

        restart_redis(elapsed)
      end
      kill(elapsed) if elapsed >= @next_kill
    end

    private

    # Sidekiq exits if Redis is down while it boots (not the gem's doing): the
    # restart waits until no replacement is booting.
    def booted? = @sidekiq.redis { @fleet.booted?(_1) }

    def kill(elapsed)
      victim, replacement = @fleet.kill_one
      @next_kill = elapsed + @plan.kill_interval
      @say.call(elapsed, "kill -9 #{victim.name} (pid #{victim.pid}), started #{replacement.name}")
    end

    def restart_redis(elapsed)
      down_from = LimitFetchChaos.now_ns
      @redis.stop
      @redis.start
      @restart = Restart.new(at: elapsed, down_from: down_from, down_until: LimitFetchChaos.now_ns)
      @say.call(elapsed, "restarted Redis (SIGTERM, then the same port and AOF): down #{@restart.seconds.round(2)} s")
    end
  end
end
