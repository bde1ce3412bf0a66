# frozen_string_literal: true

module LimitFetchChaos
  # The jobs the gem discarded at their limit (`on_limit: :discard`), as it
  # accounts for them: a count per class in Redis (`counted`: class =>
  # count) and one info line per job in the log of the process whose fetch
  # dropped it (`logged`: [class, jid, job limit id] per line). A discarded
  # job is not lost: it is in both. DiscardChaosJob's are the only ones
  # allowed.
  #
  # Unless its line died with its process: a kill -9 between the fetch that
  # dropped a batch (counted, atomically, in Redis) and the last of its
  # lines. Such discards (`unlogged`) are told by exact accounting: as many
  # DiscardChaosJobs neither completed nor logged as the count has more than
  # the lines. A job lost beside them would break the equality, and fail.
  class Discards
    KEY = KEYS::DISCARDED
    NAME = DiscardChaosJob.name
    LINE = /sidekiq-limit_fetch: discarded (\S+) (\S+): (.+) was at its limit$/

    attr_reader :counted, :logged, :unlogged

    # `logs`: the processes' log files; `pushed`: DiscardChaosJob's jids;
    # `completed`: the jids that completed.
    def self.read(conn, logs, pushed:, completed:)
      logged = logs.flat_map { File.readlines(_1).grep(LINE) }.map { _1.match(LINE).captures }
      new(Run.hash(conn.call("HGETALL", KEY)).transform_values(&:to_i), logged, pushed:, completed:)
    end

    # How many jobs completed or were discarded, from Redis: the run goes on
    # until all have. (A job that was both, finished but unacknowledged when
    # its process was killed, then discarded, counts twice: rare, and a job
    # still to run would then be found lost or queued.)
    def self.settled(conn)
      completed, discarded = conn.pipelined do |pipe|
        pipe.call("SCARD", ChaosLedger::COMPLETED)
        pipe.call("HGET", KEY, NAME)
      end
      completed + discarded.to_i
    end

    def initialize(counted, logged, pushed: [], completed: [])
      @counted = counted
      @logged = logged
      missing = pushed - completed - logged.map { _2 }
      @unlogged = missing.size == shortfall ? missing : []
    end

    def jids = (logged.map { _2 } + unlogged).uniq

    # Each sentence a failure: `tenants`, jid => tenant of each job of the
    # LIMITED classes pushed. The count and the lines must agree, and every
    # line name a DiscardChaosJob pushed, once, with the limit of the tenant
    # it was pushed with.
    def problems(tenants)
      [("jobs of classes that park were discarded: #{others.map { _1.join(" ") }.join(", ")}" if others.any?),
       *mismatches,
       *strays(tenants).first(Checks::SHOWN).map { "a discard logged for no #{NAME} pushed with that key: #{_1}" },
       ("jobs discarded more than once: #{repeated}" if repeated.any?)].compact
    end

    def to_h = {counted: counted, logged: logged.size, unlogged: unlogged.size, jobs: jids.size}

    private

    # The lines that name another class, or a key not the jid's tenant's.
    def strays(tenants) = logged.reject { expected?(_1, tenants) }.map { _1.join(" ") }

    def expected?((job_class, jid, id), tenants) = job_class == NAME && id == "key:#{NAME}##{tenants[jid]}"

    # DiscardChaosJob's discards counted beyond its lines.
    def shortfall = counted.fetch(NAME, 0) - logged.count { _1.first == NAME }

    # Per class, the discards logged, and DiscardChaosJob's unlogged ones.
    def accounted = logged.map(&:first).tally.tap { _1[NAME] = _1.fetch(NAME, 0) + unlogged.size }

    # Classes whose discards counted and accounted for differ.
    def mismatches
      lines = accounted
      (counted.keys | lines.keys).filter_map do |job_class|
        count = counted.fetch(job_class, 0)
        seen = lines.fetch(job_class, 0)
        "#{job_class}: #{count} discards counted in #{KEY}, #{seen} logged" if count != seen
      end
    end

    # Counts of classes other than DiscardChaosJob.
    def others = counted.except(NAME).select { |_, count| count.positive? }

    def repeated = logged.map { _2 }.tally.select { |_, times| times > 1 }.keys
  end
end
