# frozen_string_literal: true

require "fileutils"
require "tmpdir"

module TestJobs
  # Runs jobs, `width` at a time, in the order given; a job that runs longer
  # than TIMEOUT is killed and fails.
  class Pool
    TIMEOUT = 420

    def initialize(jobs, width:)
      @waiting = jobs.dup
      @width = width
      @running = {}
      @done = []
    end

    # The jobs that failed.
    def run
      Dir.mktmpdir("limit-fetch-test-jobs-") do |dir|
        until @waiting.empty? && @running.empty?
          fill(dir)
          reap
        end
        report # while the jobs' logs exist
      ensure
        @running.each_value(&:kill)
      end
    end

    private

    def fill(dir)
      while @running.size < @width && (job = @waiting.shift)
        @running[job.start(dir).pid] = job
      end
    end

    def reap
      pid, status = Process.wait2(-1, Process::WNOHANG)
      return finish(@running.delete(pid), status.success? ? :passed : :failed) if pid

      @running.values.select { _1.age > TIMEOUT }.each do |job|
        job.kill
        Process.wait(job.pid)
        finish(@running.delete(job.pid), :"timed out after #{TIMEOUT} s")
      end
      sleep 0.05
    end

    def finish(job, status)
      job.finish(status)
      @done << job
      puts job.line
      $stdout.flush
    end

    def report
      failed = @done.reject(&:passed?)
      failed.each { |job| puts "\n==== #{job.name}: #{job.status}\n#{job.output}" }
      puts "\n#{@done.size - failed.size} of #{@done.size} jobs passed"
      failed
    end
  end
end
