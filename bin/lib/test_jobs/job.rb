# frozen_string_literal: true

module TestJobs
  # A command of the run, in a process group of its own, its output in a log.
  class Job
    attr_reader :name, :pid, :status, :seconds

    def initialize(name, env, command)
      @name = name
      @env = env
      @command = command
    end

    def start(dir)
      @log = File.join(dir, "#{name.gsub(/[^\w.-]+/, "_")}.log")
      @started = TestJobs.monotonic
      @pid = Process.spawn(@env, *@command, chdir: ROOT, pgroup: true, in: File::NULL, %i[out err] => [@log, "w"])
      self
    end

    def age = TestJobs.monotonic - @started

    def passed? = status == :passed

    # Ends what the job left running (Sidekiq processes, servers it started).
    def kill
      Process.kill("KILL", -pid)
    rescue Errno::ESRCH
      nil
    end

    def finish(status)
      kill
      @status = status
      @seconds = age
    end

    def line
      format("%<verdict>-9s %<seconds>6.1f s  %<name>s%<counts>s",
        verdict: passed? ? "ok" : "FAILED", seconds: seconds, name: name, counts: counts)
    end

    def output = File.read(@log)

    private

    def counts
      tail = output.lines.last(40).join
      found = tail[/\d+ examples?, \d+ failures?(, \d+ pending)?/] || tail[/test result: \w+\. \d+ passed; \d+ failed/]
      found ? "  (#{found})" : ""
    end
  end

  def self.monotonic = Process.clock_gettime(Process::CLOCK_MONOTONIC)
end
