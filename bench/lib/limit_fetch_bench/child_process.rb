# frozen_string_literal: true

module LimitFetchBench
  # Processes the driver starts: redis-server and the delay proxy (each in its
  # own process group, stopped by the driver), and the measuring processes
  # (bench/run_one.rb), one per run, which get their spec as JSON and end
  # with a line "RESULT <json>" on their standard output.
  module ChildProcess
    RUN_ONE = File.join(REPO, "bench", "run_one.rb")

    module_function

    def spawn(*command, log:)
      Process.spawn(*command, pgroup: true, %i[out err] => [log, "a"])
    end

    # Runs one measurement and returns its result; kills it after `timeout`
    # seconds. The block, if any, gets the child's stdin, stdout and deadline
    # first, for a conversation (see IdleRun).
    def measure(spec, log:, timeout:, &)
      File.write(log, "==> #{JSON.generate(spec)}\n", mode: "a")
      deadline = LimitFetchBench.monotonic + timeout
      Open3.popen2("ruby", RUN_ONE, JSON.generate(spec), err: [log, "a"]) do |stdin, stdout, wait|
        converse(stdin, stdout, wait, deadline, &)
      rescue Failure => e
        signal("KILL", wait.pid, group: false)
        raise Failure, "#{e.message}:\n#{LimitFetchBench.tail(log)}"
      end
    end

    def converse(stdin, stdout, wait, deadline)
      yield stdin, stdout, deadline if block_given?
      line = read_until(stdout, "RESULT ", deadline)
      raise Failure, "a measuring process failed (#{wait.value})" unless line

      JSON.parse(line.delete_prefix("RESULT "))
    end

    # The first line starting with `prefix`, skipping others; nil at the end
    # of the output; Failure at the deadline.
    def read_until(io, prefix, deadline)
      loop do
        left = deadline - LimitFetchBench.monotonic
        raise Failure, "a measuring process did not answer in time" unless left.positive? && io.wait_readable(left)

        line = io.gets
        return line if line.nil? || line.start_with?(prefix)
      end
    end

    # The exit status if the process has ended (it is then reaped), else nil.
    def ended(pid)
      _, status = Process.wait2(pid, Process::WNOHANG)
      status
    rescue Errno::ECHILD
      :reaped
    end

    # Sends TERM to the process group, waits up to `timeout` seconds, then
    # kills what is left.
    def stop(pid, timeout: 5)
      signal("TERM", pid)
      deadline = LimitFetchBench.monotonic + timeout
      sleep 0.02 until ended(pid) || LimitFetchBench.monotonic > deadline
      return if ended(pid)

      signal("KILL", pid)
      ended(pid) || Process.wait(pid)
    end

    def signal(name, pid, group: true)
      Process.kill(name, group ? -pid : pid)
    rescue Errno::ESRCH, Errno::EPERM
      nil
    end
  end
end
