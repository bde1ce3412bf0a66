# frozen_string_literal: true

module LimitFetchTools
  # Processes a driver or a spec starts (redis-server, Sidekiq processes):
  # each in its own process group, so that a Ctrl-C on the terminal reaches
  # only the driver, which then stops them in order (the Sidekiq processes
  # before their Redis), and so that a signal reaches what a process started
  # itself (`bundle exec`'s children). Started outside the driver's bundle,
  # with no standard input, output and errors appended to a log.
  module ChildProcess
    module_function

    def spawn(env, *command, log:, chdir: Dir.pwd)
      LimitFetchTools.unbundled do
        Process.spawn(env, *command, chdir: chdir, pgroup: true, in: File::NULL, %i[out err] => [log, "a"])
      end
    end

    # The exit status if the process has ended (it is then reaped), :reaped
    # if it was reaped before, else nil.
    def ended(pid)
      _, status = Process.wait2(pid, Process::WNOHANG)
      status
    rescue Errno::ECHILD
      :reaped
    end

    # The exit status once the process has ended; nil after `timeout` seconds.
    def wait(pid, timeout:)
      deadline = LimitFetchTools.monotonic + timeout
      loop do
        status = ended(pid)
        return status if status
        return nil if LimitFetchTools.monotonic > deadline

        sleep 0.02
      end
    end

    # Sends TERM to each process group, waits up to `timeout` seconds for them
    # all, then kills what is left. Returns the pids it had to kill.
    def stop(pids, timeout:)
      pids.each { signal("TERM", _1) }
      deadline = LimitFetchTools.monotonic + timeout
      left = pids.reject { wait(_1, timeout: [deadline - LimitFetchTools.monotonic, 0].max) }
      left.each { kill(_1) }
    end

    # SIGKILL to the process group; its exit status once it is reaped.
    def kill(pid)
      signal("KILL", pid)
      ended(pid) || Process.wait2(pid).last
    rescue Errno::ECHILD
      :reaped
    end

    # `group`: to the process group the process leads (see spawn).
    def signal(name, pid, group: true)
      Process.kill(name, group ? -pid : pid)
    rescue Errno::ESRCH, Errno::EPERM
      nil
    end
  end
end
