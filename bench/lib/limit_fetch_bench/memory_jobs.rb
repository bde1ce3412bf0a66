# frozen_string_literal: true

require "sidekiq"

module LimitFetchBench
  # The memory section's job, loaded by its `sidekiq` processes (CliApp): a
  # no-op but for counting itself done in Redis (DONE), which is how the
  # measuring process knows when every job pushed has run (Sidekiq's own
  # processed count reaches Redis only with its heartbeat). Logging at WARN,
  # as the embedded Sidekiq of the other sections, so that a million jobs
  # do not write two million log lines.
  class MemoryJob
    include Sidekiq::Job

    DONE = "bench:memory:done"
    QUEUE = "memory"

    sidekiq_options queue: QUEUE

    def perform = Sidekiq.redis { _1.call("INCR", DONE) }
  end

  Sidekiq.configure_server { _1.logger.level = Logger::WARN }
end
