# frozen_string_literal: true

# Loaded both by the suite and by the Sidekiq processes the end-to-end specs
# start (their app.rb requires this file by absolute path), so it needs nothing
# but Sidekiq.

require "sidekiq"

module LimitFetchSpec
  # Records, from inside running jobs, how many jobs of each queue run at the
  # same time, in the whole cluster and in each process/capsule, and which jobs
  # started and finished. Everything lives in Redis under "lf_test:", so jobs
  # run by other processes are counted too.
  module Recorder
    PREFIX = "lf_test:"

    # KEYS: running (queue), max (queue), running (worker), max (worker),
    #       started list, workers set
    # ARGV: started entry, worker label
    START = <<~LUA
      local function bump(running, max)
        local n = redis.call("INCR", running)
        if n > tonumber(redis.call("GET", max) or "0") then redis.call("SET", max, n) end
      end
      bump(KEYS[1], KEYS[2])
      bump(KEYS[3], KEYS[4])
      redis.call("RPUSH", KEYS[5], ARGV[1])
      redis.call("SADD", KEYS[6], ARGV[2])
      return 1
    LUA

    module_function

    def key(*parts)
      PREFIX + parts.join("|")
    end

    def running_key(queue, worker = nil)
      worker ? key("running", queue, worker) : key("running", queue)
    end

    def max_key(queue, worker = nil)
      worker ? key("max", queue, worker) : key("max", queue)
    end

    def started_key(queue) = key("started", queue)

    def workers_key(queue) = key("workers", queue)

    def done_key(queue = nil)
      queue ? key("done", queue) : key("done")
    end

    def gate_key(gate) = key("gate", gate)

    # "<process>/<capsule name>/<capsule id>": the process part is
    # LF_TEST_PROCESS when set (the end-to-end specs name their processes),
    # else the pid.
    def worker_label
      capsule = Thread.current[:sidekiq_capsule]
      [
        ENV.fetch("LF_TEST_PROCESS", Process.pid.to_s),
        capsule&.name || "none",
        capsule ? capsule.object_id.to_s(36) : "0"
      ].join("/")
    end

    def track(queue, jid)
      worker = worker_label
      Sidekiq.redis do |conn|
        conn.call("EVAL", START, 6,
          running_key(queue), max_key(queue), running_key(queue, worker), max_key(queue, worker),
          started_key(queue), workers_key(queue),
          "#{worker} #{jid}", worker)
      end
      finished = false
      begin
        yield
        finished = true
      ensure
        Sidekiq.redis do |conn|
          conn.pipelined do |pipe|
            pipe.call("DECR", running_key(queue))
            pipe.call("DECR", running_key(queue, worker))
            if finished
              pipe.call("RPUSH", done_key, jid)
              pipe.call("RPUSH", done_key(queue), jid)
            end
          end
        end
      end
    end

    def starts_key(label) = key("starts", label)

    # Records when a job of +label+ started (the Unix time, to the
    # microsecond): a rate's windows are checked from the jobs' own starts.
    def stamp(label)
      now = Process.clock_gettime(Process::CLOCK_REALTIME)
      Sidekiq.redis { |conn| conn.call("RPUSH", starts_key(label), format("%.6f", now)) }
    end

    # Waits until the spec opens the gate (sets its key), at most +timeout+ s.
    def wait_for_gate(gate, timeout)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
      until Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
        break if Sidekiq.redis { |conn| conn.call("EXISTS", gate_key(gate)) } == 1

        sleep 0.05
      end
    end
  end

  # perform(queue, seconds, gate = nil): sleeps +seconds+, or with a gate waits
  # until the gate opens (at most +seconds+), while Recorder counts it.
  class TrackedJob
    include Sidekiq::Job

    sidekiq_options retry: false

    def perform(queue, seconds = 0.02, gate = nil)
      Recorder.track(queue, jid) do
        gate ? Recorder.wait_for_gate(gate, seconds) : sleep(seconds)
      end
    end
  end
end
