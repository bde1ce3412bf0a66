# frozen_string_literal: true

# bin/test's last step: the core's test binaries, each spec file and the
# GC-stress run, side by side, each a process of its own against a server
# of its own (tests/support/mod.rs and spec/support/redis_server.rb start
# one when REDIS_URL is unset). They spend most of their time waiting on
# Sidekiq processes, on Redis and on the timeouts they test, not on the
# CPU: run one after another they took 8 minutes, most of them idle.
#
# Usage: ruby bin/lib/test_jobs.rb SERVER:SCOPE...
#   SERVER  redis or valkey (LIMIT_FETCH_SERVER, tools/lib/limit_fetch_tools.rb)
#   SCOPE   all: everything; core: the core's tests and the chaos spec
# Prints a line per job as it ends, then the whole output of each that
# failed; exits 1 if any did. LIMIT_FETCH_TEST_JOBS: how many run at once
# (default 4).
require_relative "test_jobs/job"
require_relative "test_jobs/plan"
require_relative "test_jobs/pool"

module TestJobs
  ROOT = File.expand_path("../..", __dir__)

  def self.main(argv)
    jobs = Plan.new(argv).jobs
    failed = Pool.new(jobs, width: Integer(ENV.fetch("LIMIT_FETCH_TEST_JOBS", "4"))).run
    exit(failed.empty? ? 0 : 1)
  rescue ArgumentError => e
    abort "bin/lib/test_jobs.rb: #{e.message}"
  end
end

TestJobs.main(ARGV) if $PROGRAM_NAME == __FILE__
