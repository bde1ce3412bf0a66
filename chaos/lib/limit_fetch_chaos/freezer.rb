# frozen_string_literal: true

module LimitFetchChaos
  # Freezes one Sidekiq process for `seconds`, as a stalled VM or a long GC
  # pause would: SIGSTOP to its process group, then SIGCONT. Chooses the
  # live process that holds the most jobs (in its capsules' in-progress
  # lists), so that the freeze catches jobs in progress; #start reads what
  # it held once it is stopped (Frozen#held: the evidence that a job it ran
  # could run again). Nothing else happens to it meanwhile (Fleet leaves it
  # out of the kills).
  class Freezer
    attr_reader :frozen

    # `expiry`: a heartbeat's, in seconds; `say`: elapsed, text.
    def initialize(fleet, sidekiq, seconds:, expiry:, say:)
      @fleet = fleet
      @sidekiq = sidekiq
      @seconds = seconds
      @expiry = expiry
      @say = say
    end

    def idle? = @frozen.nil?

    def busy? = !@frozen.nil? && @frozen.to.nil?

    def done? = !@frozen.nil? && !@frozen.to.nil?

    # Freezes the process holding the most jobs, if one holds `at_least` of
    # each of `queues` (any, when empty); returns its Frozen, nil if none
    # did. Reads what it held once it is stopped: nothing it sent before can
    # reach Redis after that read.
    def start(elapsed, queues: [], at_least: 1)
      victim = @sidekiq.redis { pick(@fleet.holding(_1), queues, at_least) } or return

      from = LimitFetchChaos.now_ns
      stop_process(victim)
      held = @sidekiq.redis { @fleet.held(_1, victim.pid) }
      @thaw_at = LimitFetchChaos.monotonic + @seconds
      @say.call(elapsed, "froze #{victim.name} (SIGSTOP) for #{@seconds} s, holding #{held&.size.inspect} jobs")
      @frozen = Frozen.new(worker: victim.name, from: from, to: nil, held: held, expiry: @expiry)
    end

    # Wakes the process once its time is up.
    def act(elapsed)
      return unless busy? && LimitFetchChaos.monotonic >= @thaw_at

      thaw
      @say.call(elapsed, "woke #{@frozen.worker} (SIGCONT) after #{@frozen.seconds.round(2)} s")
    end

    # Seconds the freeze has lasted so far (0 before it).
    def paused = @frozen ? @frozen.seconds : 0

    # Wakes the process if it is still frozen (the run is cut short).
    def stop = (thaw if busy?)

    private

    # SIGSTOP to its process group; returns once its process is stopped
    # (state T in /proc).
    def stop_process(worker)
      @fleet.frozen = worker
      LimitFetchTools::ChildProcess.signal("STOP", worker.pid)
      LimitFetchTools.wait_for("#{worker.name} did not stop on SIGSTOP", timeout: 5) do
        File.read("/proc/#{worker.pid}/stat")[/\) (\S)/, 1] == "T"
      end
    end

    def thaw
      LimitFetchTools::ChildProcess.signal("CONT", @fleet.frozen.pid)
      @fleet.frozen = nil
      @frozen = @frozen.with(to: LimitFetchChaos.now_ns)
    end

    def pick(holding, queues, at_least)
      ready = holding.select do |_worker, by_queue|
        queues.all? { by_queue.fetch(_1, []).size >= at_least } && by_queue.values.sum(&:size) >= at_least
      end
      ready.max_by { |_worker, by_queue| by_queue.values.sum(&:size) }&.first
    end
  end
end
