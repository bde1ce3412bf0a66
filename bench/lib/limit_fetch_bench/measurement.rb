# frozen_string_literal: true

module LimitFetchBench
  # The measuring processes (bench/run_one.rb), one per run: each gets its
  # spec as JSON and ends with a line "RESULT <json>" on its standard output;
  # its standard error goes to the run's log.
  module Measurement
    RUN_ONE = File.join(REPO, "bench", "run_one.rb")

    module_function

    # Runs one measurement and returns its result; kills it after `timeout`
    # seconds. The block, if any, gets the child's stdin, stdout and deadline
    # first, for a conversation (see IdleRun).
    def run(spec, log:, timeout:, &)
      File.write(log, "==> #{JSON.generate(spec)}\n", mode: "a")
      deadline = LimitFetchBench.monotonic + timeout
      Open3.popen2("ruby", RUN_ONE, JSON.generate(spec), err: [log, "a"]) do |stdin, stdout, wait|
        converse(stdin, stdout, wait, deadline, &)
      rescue Failure => e
        LimitFetchTools::ChildProcess.signal("KILL", wait.pid, group: false)
        raise Failure, "#{e.message}:\n#{LimitFetchTools.tail(log)}"
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
  end
end
