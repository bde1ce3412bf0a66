# frozen_string_literal: true

module LimitFetchDemo
  # Processes the demo starts: each in its own process group, so that a Ctrl-C
  # on the terminal reaches only the driver, which then stops them in order.
  module ChildProcess
    module_function

    def spawn(env, *command, log:, chdir: Dir.pwd)
      LimitFetchDemo.unbundled do
        Process.spawn(env, *command, chdir: chdir, pgroup: true, in: File::NULL, %i[out err] => [log, "a"])
      end
    end

    # The exit status if the process has ended (it is then reaped), else nil.
    def ended(pid)
      _, status = Process.wait2(pid, Process::WNOHANG)
      status
    rescue Errno::ECHILD
      :reaped
    end

    # Sends TERM to each process group, waits up to `timeout` seconds for them
    # all, then kills what is left. Returns the pids it had to kill.
    def stop(pids, timeout:)
      pids.each { signal("TERM", _1) }
      deadline = LimitFetchDemo.monotonic + timeout
      pids.select do |pid|
        sleep 0.05 until ended(pid) || LimitFetchDemo.monotonic > deadline
        next false if ended(pid)

        kill(pid)
        true
      end
    end

    # SIGKILL to the process group; returns once the process is reaped.
    def kill(pid)
      signal("KILL", pid)
      ended(pid) || Process.wait(pid)
    rescue Errno::ECHILD
      nil
    end

    def signal(name, pid)
      Process.kill(name, -pid)
    rescue Errno::ESRCH, Errno::EPERM
      nil
    end
  end
end
