# frozen_string_literal: true

module LimitFetchChaos
  # The run's Sidekiq processes: `bundle exec sidekiq -C config/sidekiq.yml
  # -r ./app.rb` in the app directory, named w1, w2, ... in the order they
  # start (a replacement takes the next name), each logging to log/<name>.log.
  # Remembers when it saw each one gone (`ended`, wall-clock ns): a run its
  # death cut short ended by then at the latest; and, for each it killed, the
  # jobs its capsules held in Redis when it died (`held_at_kill`, name => jids;
  # nil if Redis could not say): those, and only those, its reaper pushes
  # back, to run again. The process Freezer froze (`frozen`) is never
  # chosen for a kill.
  class Fleet
    Worker = Data.define(:name, :pid, :log, :started)
    REAPED = /reaped dead capsule \S+: freed (\d+) busy slots, pushed (\d+) in-progress jobs/

    attr_reader :ended, :killed, :held_at_kill
    # The Worker frozen now (Freezer), nil if none.
    attr_accessor :frozen

    def initialize(app, redis_url, plan)
      @app = app
      @redis_url = redis_url
      @plan = plan
      @live = []
      @started = 0
      @ended = {}
      @killed = []
      @held_at_kill = {}
      @capsules = Capsules.new
    end

    def start
      @plan.processes.times { @live << spawn }
      self
    end

    def names = @live.map(&:name)

    def live = @live.dup

    def replacements = @started - @plan.processes

    # Raises Failure if a process exited that the run did not kill.
    def check!
      @live.each do |worker|
        status = LimitFetchTools::ChildProcess.ended(worker.pid) or next
        raise Failure, "Sidekiq process #{worker.name} exited by itself (#{status}):\n" \
                       "#{LimitFetchTools.tail(worker.log)}"
      end
    end

    # kill -9 a random process, then, once it is gone, reads through `conn`
    # what its capsules held, then starts its replacement; returns both.
    def kill_one(conn)
      victim = pick_victim
      LimitFetchTools::ChildProcess.kill(victim.pid)
      @ended[victim.name] = LimitFetchChaos.now_ns # it is reaped: it runs nothing any more
      @killed << victim.name
      @held_at_kill[victim.name] = held(conn, victim.pid)
      [victim, spawn.tap { @live << _1 }]
    end

    def pick_victim = @live.delete(@plan.victim(@live - [frozen]))

    # True once exactly the live processes have capsules registered with the
    # gem: each has started, and every dead one's capsules were reaped.
    def settled?(conn) = @capsules.pids(conn).sort == (@live.map(&:pid) * @plan.capsules).sort

    # True once every live process has registered its capsules: it is past
    # booting, when Sidekiq exits if Redis does not answer.
    def booted?(conn)
      counts = @capsules.pids(conn).tally
      @live.all? { counts.fetch(_1.pid, 0) >= @plan.capsules }
    end

    # Live Worker => {queue => jids} its capsules hold in their in-progress
    # lists.
    def holding(conn)
      owners = @capsules.owners(conn)
      @live.to_h { [_1, @capsules.in_progress(conn, owners, _1.pid)] }
    end

    # The jids in the in-progress lists of the capsules of process `pid`; nil
    # if Redis did not answer. Its capsules are told by their :info whether
    # or not their heartbeat is there (a process killed right after an
    # outage, before its first beat, has an expired heartbeat and still
    # holds its jobs), and by what was seen of them before (one reaped while
    # frozen, killed once woken before it registered again, has neither its
    # membership nor its :info, and still its in-progress lists).
    def held(conn, pid)
      @capsules.in_progress(conn, @capsules.ever_seen(conn), pid).values.flatten
    rescue RedisClient::Error
      nil
    end

    # True once every live process has run for more than +seconds+.
    def older_than?(seconds) = @live.all? { LimitFetchChaos.monotonic - _1.started > seconds }

    # TERM to every process; returns the names of those that had not exited
    # after Sidekiq's timeout plus a margin (they were then killed).
    def stop
      pids = @live.to_h { [_1.pid, _1.name] }
      pids.each_key { LimitFetchTools::ChildProcess.signal("CONT", _1) } # a stopped one would not see its TERM
      unclean = LimitFetchTools::ChildProcess.stop(pids.keys, timeout: 30)
      at = LimitFetchChaos.now_ns
      @live.each { @ended[_1.name] = at }
      @live = []
      unclean.map { pids[_1] }
    end

    # What the processes' logs say they reaped (sidekiq-limit_fetch's
    # heartbeat logs each dead capsule it frees): capsules, busy slots freed,
    # in-progress jobs pushed back to their queues.
    def reaped
      lines = logs.flat_map { File.readlines(_1).grep(REAPED) }
      counts = lines.map { _1.match(REAPED).captures.map(&:to_i) }
      {capsules: counts.size, slots: counts.sum(&:first), jobs: counts.sum(&:last)}
    end

    # What process +name+ logged of the errors the gem raised while Redis was
    # down: a failed heartbeat, and a failed fetch (which Sidekiq's processor
    # logs as the error's detailed message, once per outage and thread).
    def raised(name)
      log = File.exist?(@app.log(name)) ? File.read(@app.log(name)) : ""
      {heartbeat: log.include?("heartbeat failed: Sidekiq::LimitFetch::ConnectionError"),
       fetch: log.match?(/\(Sidekiq::LimitFetch::ConnectionError\)$/)}
    end

    # The log files of every process, live or not.
    def logs = Dir[File.join(@app.dir, "log", "w*.log")]

    def tails = @live.map { |worker| "#{worker.log}:\n#{LimitFetchTools.tail(worker.log)}" }.join

    private

    def spawn
      @started += 1
      name = "w#{@started}"
      log = @app.log(name)
      env = {"BUNDLE_GEMFILE" => @app.gemfile, "REDIS_URL" => @redis_url, "CHAOS_WORKER" => name,
             "CHAOS_HEARTBEAT_PERIOD" => @plan.heartbeat_period.to_s}
      pid = LimitFetchTools::ChildProcess.spawn(env, "bundle", "exec", "sidekiq", "-C", @plan.config_file,
        "-r", "./app.rb", log: log, chdir: @app.dir)
      Worker.new(name: name, pid: pid, log: log, started: LimitFetchChaos.monotonic)
    end
  end
end
