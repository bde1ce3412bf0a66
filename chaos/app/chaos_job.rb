# frozen_string_literal: true

require "securerandom"
require "sidekiq"
require_relative "ledger"

# perform(queue, millis[, tenant]): works (sleeps) for `millis` ms between two
# ledger entries, which name its class (a subclass's, for the job limits'
# classes) and its tenant. The start is recorded before the work begins and the work
# waits for Redis to take it, so no work goes unrecorded; the clock is read
# before each write, so a write delayed by a Redis restart records the true
# time. The driver loads this file too (the job limits' classes', to push
# them by class), so the process's name is read when a job runs, not when it loads.
class ChaosJob
  include Sidekiq::Job

  # The name bin/chaos gave this process.
  def self.worker = ENV.fetch("CHAOS_WORKER")

  def perform(queue, millis, tenant = nil)
    run = SecureRandom.hex(8)
    ChaosLedger.started(run, jid, self.class.worker, queue, self.class.name, tenant)
    sleep(millis / 1000.0)
    ChaosLedger.finished(run, jid)
  end
end
