# frozen_string_literal: true

module LimitFetchChaos
  # Changes the limit of GroupedChaosJob's TUNED tenant while jobs run, as an
  # operator would from a console: at each of CHANGES's points of the run's
  # progress (with --jobs, the pushes' pace: Feeder#pace), `bundle exec ruby tune.rb LIMIT|reset` in the app directory
  # (JobLimit#limit= or #reset in a process of its own), one at a time,
  # logging to log/tune.log. Raised, lowered, then reset to the default its
  # jobs carry. #schedule is the limit over time that the ledger's runs are
  # held to (see JobLimitConcurrency). The Redis outage waits while a change
  # is under way (#busy?).
  class Tuner
    ID = "key:#{GroupedChaosJob::GROUP}##{GroupedChaosJob::TUNED}".freeze
    # [progress, limit (nil: reset), jobs parked first]: the raise waits until
    # enough jobs are parked to fill its new slots at once, so that it shows
    # (else its queue's jobs could all be done by then).
    CHANGES = [[0.2, 4, 3], [0.5, 2, 0], [0.8, nil, 0]].freeze
    PARKED = KEYS.parked(ID).freeze
    # What tune.rb printed: wall-clock ns before and after the call, and the
    # limit then stored ("-": none).
    Change = Data.define(:limit, :before, :after, :at_s, :stored)
    PRINTED = /^tuned (\d+) (\d+) (\S+)$/

    attr_reader :changes

    def initialize(app, redis_url, say:)
      @app = app
      @redis_url = redis_url
      @say = say
      @changes = []
    end

    # `parked`: the TUNED tenant's jobs parked now.
    def act(elapsed, progress, parked:)
      if @pid
        status = LimitFetchTools::ChildProcess.ended(@pid) or return
        return done(status, elapsed)
      end
      point, _, ready = CHANGES[@changes.size]
      start(elapsed) if point && progress >= point && parked >= ready
    end

    def busy? = !@pid.nil?

    # Waits for a change under way to be done.
    def finish
      return unless @pid

      status = LimitFetchTools::ChildProcess.wait(@pid, timeout: 60) or raise Failure, "tune.rb did not end:\n#{tail}"
      done(status, nil)
    end

    # Stops a change under way (the run is cut short).
    def stop
      LimitFetchTools::ChildProcess.stop([@pid], timeout: 5) if @pid
      @pid = nil
    end

    # The default its jobs carry, then each change: a raise from when its
    # call began, a lowering (or reset) from when it returned.
    def schedule
      limits = [GroupedChaosJob::TENANT_LIMIT, *@changes.map { _1.limit || GroupedChaosJob::TENANT_LIMIT }]
      steps = @changes.each_with_index.map do |change, i|
        [limits[i + 1] > limits[i] ? change.before : change.after, limits[i + 1]]
      end
      LimitSchedule.new(initial: limits.first, steps: steps)
    end

    # What went wrong: a change that was never made, or did not stick.
    def problems
      missing = CHANGES.drop(@changes.size).map { |point, limit, _| "#{limit || "reset"} at #{point}" }
      [("limit changes of #{ID} never made: #{missing.join(", ")}" if missing.any?),
       *@changes.filter_map do |change|
         "#{ID}: set to #{change.limit || "reset"}, stored #{change.stored.inspect}" if change.stored != change.limit
       end].compact
    end

    def to_h = {id: ID, changes: @changes.map(&:to_h), schedule: schedule.to_s}

    private

    def log = @app.log("tune")

    def tail = LimitFetchTools.tail(log)

    def start(elapsed)
      @started_at = elapsed
      @printed_from = File.exist?(log) ? File.size(log) : 0
      @pid = LimitFetchTools::ChildProcess.spawn({"BUNDLE_GEMFILE" => @app.gemfile, "REDIS_URL" => @redis_url},
        "bundle", "exec", "ruby", "tune.rb", (CHANGES[@changes.size][1] || "reset").to_s, log: log, chdir: @app.dir)
    end

    def done(status, elapsed)
      @pid = nil
      printed = File.read(log)[@printed_from..]&.match(PRINTED)
      raise Failure, "tune.rb failed (#{status}):\n#{tail}" unless status.success? && printed

      @changes << change(*printed.captures)
      @say.call(elapsed || @started_at,
        "#{ID}: limit #{@changes.last.limit ? "set to #{@changes.last.limit}" : "reset"}")
    end

    def change(before, after, stored)
      Change.new(limit: CHANGES[@changes.size][1], before: Integer(before), after: Integer(after),
        at_s: @started_at.round(2), stored: stored == "-" ? nil : Integer(stored))
    end
  end
end
