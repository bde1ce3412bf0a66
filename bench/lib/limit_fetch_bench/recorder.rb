# frozen_string_literal: true

module LimitFetchBench
  # What a run's jobs did, recorded in-process: by a server middleware, jobs
  # started and done, jobs running at once per queue (and the most seen),
  # pickup latency, and the slot utilisation while a backlog existed (jobs
  # running, averaged over time, from the first start until the last job of
  # the backlog started); by FetchHooks, jobs in flight per queue (from the
  # return of retrieve_work to the call of acknowledge or requeue: a slot is
  # booked before the first and freed after the second) and the most seen.
  # A seed's guard (SeedLock, SeedReschedule) tells it of jobs it dropped,
  # which count as done, and of jobs it rescheduled, which come back.
  class Recorder
    class << self
      attr_accessor :current
    end

    attr_reader :latencies, :last_started_at, :dropped, :rescheduled

    def initialize(expected: nil)
      @expected = expected
      @lock = Mutex.new
      @done_signal = Thread::Queue.new
      @started = @done = @running_total = @dropped = @rescheduled = 0
      @running = Hash.new(0)
      @max = Hash.new(0)
      @in_flight = Hash.new(0)
      @max_in_flight = Hash.new(0)
      @latencies = []
      @busy_seconds = 0.0
    end

    def started(queue, args)
      now = LimitFetchBench.monotonic
      pushed_at = args[1]
      @lock.synchronize do
        @last_started_at = Process.clock_gettime(Process::CLOCK_REALTIME)
        @latencies << (@last_started_at - pushed_at) if pushed_at
        count_start(queue, now)
      end
    end

    def finished(queue)
      now = LimitFetchBench.monotonic
      @lock.synchronize do
        integrate(now)
        @running[queue] -= 1
        @running_total -= 1
        @done += 1
        @done_signal << true if @done == @expected
      end
    end

    # A job dropped without running: done.
    def job_dropped
      @lock.synchronize do
        @dropped += 1
        @done += 1
        @done_signal << true if @done == @expected
      end
    end

    def job_rescheduled = @lock.synchronize { @rescheduled += 1 }

    def fetched(queue)
      @lock.synchronize { @max_in_flight[queue] = [@max_in_flight[queue], @in_flight[queue] += 1].max }
    end

    def released(queue)
      @lock.synchronize { @in_flight[queue] -= 1 }
    end

    # Sets how many jobs to wait for, once known.
    def expect(count)
      @lock.synchronize do
        @expected = count
        @done_signal << true if @done >= count
      end
    end

    # Waits until the expected jobs are done (true) or `timeout` seconds passed.
    def done_within?(timeout) = !@done_signal.pop(timeout: timeout).nil?

    def done = @lock.synchronize { @done }

    def max_running = @lock.synchronize { @max.dup }

    def max_in_flight = @lock.synchronize { @max_in_flight.dup }

    # Jobs running, averaged over the backlog window, divided by `slots`.
    def utilisation(slots)
      @lock.synchronize do
        return nil unless @window_start && @window_end && @window_end > @window_start

        @busy_seconds / (@window_end - @window_start) / slots
      end
    end

    private

    def count_start(queue, now)
      integrate(now)
      @window_start ||= now
      @started += 1
      @window_end = now if @started == @expected
      @running_total += 1
      @max[queue] = [@max[queue], @running[queue] += 1].max
    end

    # Adds the jobs running since the last event, while the backlog lasts.
    def integrate(now)
      @busy_seconds += @running_total * (now - @last_event) if @last_event && @window_end.nil?
      @last_event = now
    end

    # Sidekiq server middleware reporting to a Recorder.
    class Middleware
      include Sidekiq::ServerMiddleware

      def initialize(recorder)
        @recorder = recorder
      end

      def call(_job, payload, queue)
        @recorder.started(queue, payload["args"])
        begin
          yield
        ensure
          @recorder.finished(queue)
        end
      end
    end
  end
end
