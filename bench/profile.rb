# frozen_string_literal: true

# Where Redis spends its time per job, way of fetching by way of fetching:
# what bench/results/profile.md reports. Each way takes 40,000 no-op jobs
# from 10 client threads, each acknowledging its last job as it fetches the
# next, as a processor does, on a Redis of its own; per job: Redis CPU
# (INFO cpu), commands, and each command's time (INFO commandstats; a
# script's own commands are counted, and in its FCALL's time too).
# PROFILE_JOBS and PROFILE_THREADS change the jobs and threads (one thread:
# every request wakes Redis by itself, as on a quiet machine); PATTERN, a
# regular expression, runs only the ways whose label it matches.
#
#   [PROFILE_JOBS=N] [PROFILE_THREADS=N] bin/sandbox ruby bench/profile.rb [ROUNDS [PATTERN]]
#   (after bin/bench or bin/test compiled the gem)
$LOAD_PATH.unshift(File.join(__dir__, "lib"), File.expand_path("../lib", __dir__))
require "limit_fetch_bench"
require "sidekiq/limit_fetch"
require "limit_fetch_bench/redis_probe"
require "limit_fetch_bench/profile"

$stdout.sync = true
only = ARGV[1] && Regexp.new(ARGV[1])
LimitFetchBench::Profile.new(rounds: Integer(ARGV.fetch(0, "3")), only: only).run
