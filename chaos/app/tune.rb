# frozen_string_literal: true

# `bundle exec ruby tune.rb LIMIT|reset`, in the app directory, with
# REDIS_URL: what an operator runs from a console to change the limit of
# GroupedChaosJob's TUNED tenant while jobs run (JobLimit#limit= or #reset).
# Prints "tuned BEFORE AFTER STORED": the wall-clock ns just before the call
# and just after it returned (the change took hold in between), and the
# limit then stored ("-" for none).
require "sidekiq"
require "sidekiq-limit_fetch"
require_relative "grouped_chaos_job"

value = ARGV.fetch(0)
limit = Sidekiq::LimitFetch::JobLimit.for(GroupedChaosJob, key: GroupedChaosJob::TUNED)
before = Process.clock_gettime(Process::CLOCK_REALTIME, :nanosecond)
value == "reset" ? limit.reset : limit.limit = Integer(value)
after = Process.clock_gettime(Process::CLOCK_REALTIME, :nanosecond)
puts "tuned #{before} #{after} #{limit.stored || "-"}"
