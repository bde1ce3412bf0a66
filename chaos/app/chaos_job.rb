# frozen_string_literal: true

require "securerandom"
require "sidekiq"
require_relative "ledger"

# perform(queue, millis): works (sleeps) for `millis` ms between two ledger
# entries. The start is recorded before the work begins and the work waits
# for Redis to take it, so no work goes unrecorded; the clock is read before
# each write, so a write delayed by a Redis restart records the true time.
class ChaosJob
  include Sidekiq::Job

  # The name bin/chaos gave this process.
  WORKER = ENV.fetch("CHAOS_WORKER")

  def perform(queue, millis)
    run = SecureRandom.hex(8)
    ChaosLedger.started(run, jid, WORKER, queue)
    sleep(millis / 1000.0)
    ChaosLedger.finished(run, jid)
  end
end
