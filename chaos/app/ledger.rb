# frozen_string_literal: true

# The ledger in Redis that the chaos jobs write and bin/chaos reads: one entry
# per run of a job (a run is named by a random token), with wall-clock times
# in nanoseconds. Every process runs on the same machine, so they share the
# clock. Each write is idempotent, so one whose reply was lost is sent again,
# until Redis is back (a restart) or RETRY_FOR seconds have passed: a job's
# own writes never fail in the chaos's outage, so Sidekiq never retries a
# chaos job.
module ChaosLedger
  # hash: run token => "jid worker queue start_ns class[ tenant]" (a tenant
  # for the runs of the classes with job limits)
  STARTS = "chaos:starts"
  # hash: run token => "end_ns written_ns": when the work ended, and when
  # Redis had that entry (later by the outage if it came then); the job's
  # acknowledgement follows the write
  ENDS = "chaos:ends"
  # set: the jids that finished at least once
  COMPLETED = "chaos:completed"

  RETRY_FOR = 60
  # Nanoseconds: a first write of the end that took longer (it waited for
  # Redis) is followed by one that says when it was written.
  WRITTEN_LATE = 100_000_000

  module_function

  # `labels`: the job's class, and its tenant if any.
  def started(run, jid, worker, queue, *labels)
    entry = [jid, worker, queue, now, *labels.compact].join(" ")
    write { |conn| conn.call("HSET", STARTS, run, entry) }
  end

  def finished(run, jid)
    at = now
    write do |conn|
      conn.multi do |transaction|
        transaction.call("HSET", ENDS, run, "#{at} #{at}")
        transaction.call("SADD", COMPLETED, jid)
      end
    end
    written = now
    write { |conn| conn.call("HSET", ENDS, run, "#{at} #{written}") } if written - at > WRITTEN_LATE
  end

  def now = Process.clock_gettime(Process::CLOCK_REALTIME, :nanosecond)

  def write(&)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + RETRY_FOR
    begin
      Sidekiq.redis(&)
    rescue RedisClient::ConnectionError, RedisClient::CommandError => e
      raise if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
      raise if e.is_a?(RedisClient::CommandError) && !e.message.start_with?("LOADING")

      sleep 0.05
      retry
    end
  end
end
