# frozen_string_literal: true

module LimitFetchChaos
  # One run of a job as the ledger recorded it (chaos/app/ledger.rb), times in
  # wall-clock ns. `finish` is nil when the job's process died (or was
  # stopped) before the job ended; `written`, when Redis had that end (the
  # job returned then; later than `finish` if the write waited for Redis);
  # `cut` is when the driver saw that process gone, later than anything it
  # ran. `job_class`: its class's name; `tenant`: the key of a LIMITED
  # class's job, else nil.
  Run = Data.define(:jid, :worker, :queue, :start, :finish, :written, :cut, :job_class, :tenant) do
    def initialize(job_class: "ChaosJob", tenant: nil, written: nil, finish: nil, **)
      super(job_class:, tenant:, finish:, written: written || finish, **)
    end

    # Reads every run. `ended`: worker name => when it was seen gone.
    def self.read(conn, ended)
      starts, ends = [ChaosLedger::STARTS, ChaosLedger::ENDS].map { hash(conn.call("HGETALL", _1)) }
      starts.map do |token, entry|
        jid, worker, queue, start, job_class, tenant = entry.split
        new(jid: jid, worker: worker, queue: queue, start: Integer(start), **ending(ends[token]),
          cut: ended.fetch(worker, Float::INFINITY), job_class: job_class, tenant: tenant)
      end
    end

    # An ENDS entry ("end_ns written_ns"), or nil, as keywords.
    def self.ending(entry)
      finish, written = entry&.split&.map { Integer(_1) }
      {finish: finish, written: written}
    end

    # A HGETALL reply: a Hash, or a flat Array on RESP2.
    def self.hash(reply) = reply.is_a?(Hash) ? reply : reply.each_slice(2).to_h

    def finished? = !finish.nil?

    # When the run was over: its recorded end, else when its process was seen gone.
    def end_ns = finish || cut

    def overlaps?(from, to) = start <= to && end_ns >= from
  end
end
