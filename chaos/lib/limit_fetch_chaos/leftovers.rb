# frozen_string_literal: true

module LimitFetchChaos
  # What the gem (and the run) left in Redis once every process has stopped;
  # all of it should be empty: busy lists and in-progress lists (key =>
  # length), any key of a capsule, the registered capsules (and those with an
  # entry in the beats' sorted set), any key of a job
  # limit (busy and parked lists: key => length), the set of job limits with
  # parked jobs, the fair classes' tenants waiting their turn
  # (`fair_waiting`: key => members), what the rates keep (`rate_keys`:
  # RATES), jobs still queued
  # (queue => count), the dead set's size, and any other key of the gem's
  # but those it keeps by design (`strays`, key => type; see KEPT and
  # OUTAGE).
  Leftovers = Data.define(:busy, :in_progress, :capsule_keys, :capsules, :job_limit_keys, :parked, :fair_waiting,
    :rate_keys, :queued, :dead, :strays) do
    def initialize(strays: {}, rate_keys: {}, fair_waiting: {}, **)
      super
    end
  end

  class Leftovers
    PROBLEMS = {busy: "busy slots still held", in_progress: "in-progress lists left",
                capsule_keys: "keys of capsules left", capsules: "capsules still registered",
                job_limit_keys: "keys of job limits left (busy slots, parked jobs)",
                parked: "job limits still listed as having parked jobs",
                fair_waiting: "fair classes' tenants still waiting their turn",
                rate_keys: "keys of rates left (starts in a window, jobs released and not started, limits noted " \
                           "as parked behind their rate)",
                queued: "jobs still queued", dead: "jobs in the dead set",
                strays: "other keys of the gem's left"}.freeze
    # The gem's keys that outlive its processes by design: the configured
    # queue limits, the counts of each job's recoveries from dead capsules
    # (kept 7 days: a poison pill is told by them) and of the reaps that
    # counted them (as long), of discards and of back-offs, and the data
    # format in force (the fleet's, whichever processes come next; each
    # capsule's own entry in `formats` goes with it, and a left one shows).
    KEPT = [/\Aqueue:[^:]+:(process_)?limit\z/, /\Arecover(ies|ed)\z/, /\Adiscarded\z/, /\Aback_offs\z/,
            /\Aformat\z/].freeze
    # Set by a capsule that comes back from an outage (or a freeze) longer
    # than its heartbeat's expiry: nobody reaps while it exists. It expires
    # by itself one expiry later, so it may be left while that TTL runs; a
    # key without a TTL, or a longer one, would stop reaping for good.
    OUTAGE = KEYS::OUTAGE
    # Likewise the last beat's key (see src/keys.rs): a capsule killed
    # while it was the last to beat leaves it until its TTL runs out; and
    # the census's, set for a heartbeat period by the beat that took it. A
    # TTL reads 0 in its last half second (TTL rounds to seconds).
    EXPIRING = [OUTAGE, KEYS::LAST_BEAT, KEYS::CENSUS].freeze
    # What the rates keep while they work, none of it once their windows
    # have passed: a window's starts (a job limit's, a queue's; they expire
    # a period after the last), a job limit's count of jobs released for
    # its rate and not started yet (a period after the last release), and
    # the job limits whose jobs are parked behind their rate (until the
    # first fetch after their window opens).
    RATES = [/\Alimit:.+:(starts|released)\z/, /\Aqueue:[^:]+:starts\z/, /\Arate_parked\z/].freeze
    # What back-offs and adaptive limits keep, each with a TTL: a back-off
    # until it ends, the streak of a limit's back-offs a minute longer, an
    # adaptive limit's value in force 10 minutes after its last change. Left
    # only while that TTL runs; one without a TTL would be kept for good.
    TIMED = /\Alimit:.+:(back_off|back_off_streak|adaptive)\z/

    # The other kinds of keys, each checked as its own field above.
    CHECKED = [/\Aqueue:[^:]+:busy\z/, /\Acapsule:/, /\Acapsules\z/, /\Aregistered\z/, /\Abeats\z/, /\Alimit:/,
               /\Aparked\z/,
               *RATES].freeze

    # `expiry`: a heartbeat's, in seconds (the outage key's longest TTL).
    def self.read(conn, queues, expiry: Plan::EXPIRY)
      new(busy: lengths(conn, KEYS::BUSY_PATTERN), in_progress: lengths(conn, KEYS.in_progress("*", "*")),
        capsule_keys: conn.call("KEYS", "#{PREFIX}capsule:*").sort,
        capsules: capsules(conn),
        job_limit_keys: job_limit_keys(conn),
        parked: conn.call("SMEMBERS", KEYS::PARKED).sort, fair_waiting: fair_waiting(conn), rate_keys: rate_keys(conn),
        queued: queued(conn, queues),
        dead: conn.call("ZCARD", "dead"), strays: strays(conn, expiry))
    end

    # The capsules still registered, or with an entry in the beats' set.
    def self.capsules(conn)
      (conn.call("SUNION", KEYS::CAPSULES, KEYS::REGISTERED) | conn.call("ZRANGE", KEYS::BEATS, 0, -1)).sort
    end

    # queue => jobs still in it, of those that have any.
    def self.queued(conn, queues)
      queues.to_h { [_1, conn.call("LLEN", KEYS.queue(_1))] }.select { |_queue, count| count.positive? }
    end

    # key => length of the lists whose key matches (Redis keeps no empty list)
    def self.lengths(conn, pattern) = conn.call("KEYS", pattern).sort.to_h { [_1, conn.call("LLEN", _1)] }

    # key => length of a list, else its type, of the keys that match
    def self.sizes(conn, pattern)
      conn.call("KEYS", pattern).sort.to_h do |key|
        type = conn.call("TYPE", key)
        [key, type == "list" ? conn.call("LLEN", key) : type]
      end
    end

    def self.rate_key?(key) = RATES.any? { key.delete_prefix(PREFIX).match?(_1) }

    # A fair class's set of its tenants waiting their turn (its own field).
    FAIR_WAITING = KEYS.fair_waiting("*")

    # key => the tenants (their key limits' ids) in each fair class's
    # waiting set (a sorted set, by slots held over weight).
    def self.fair_waiting(conn) = conn.call("KEYS", FAIR_WAITING).sort.to_h { [_1, conn.call("ZRANGE", _1, 0, -1)] }

    def self.fair_waiting?(key) = File.fnmatch?(FAIR_WAITING, key)

    # A fair queue's limit (`fair_limits:`), the stored value of its job
    # limit: configured, kept as a queue's limit is (KEPT).
    FAIR_QUEUE_LIMIT = /\Alimit:queue:[^:]+:limit\z/

    # key => length or type of a job limit's keys, but those of its rate,
    # the fair waiting sets, the fair queues' limits and those TIMED with a
    # TTL still running.
    def self.job_limit_keys(conn)
      sizes(conn, "#{PREFIX}limit:*").reject do |key|
        rate_key?(key) || fair_waiting?(key) || key.delete_prefix(PREFIX).match?(FAIR_QUEUE_LIMIT) || timed?(conn, key)
      end
    end

    def self.timed?(conn, key) = key.delete_prefix(PREFIX).match?(TIMED) && conn.call("PTTL", key).positive?

    # key => what each of RATES holds: the members of a sorted set, else
    # the value, with its TTL (ms).
    def self.rate_keys(conn)
      conn.call("KEYS", "#{PREFIX}*").select { rate_key?(_1) }.sort.to_h do |key|
        value = conn.call("TYPE", key) == "zset" ? conn.call("ZRANGE", key, 0, -1) : conn.call("GET", key)
        [key, "#{value.inspect}, TTL #{conn.call("PTTL", key)} ms"]
      end
    end

    # key => what it is, of the gem's keys neither checked above nor kept by
    # design; the outage and last beat's keys only if their TTL is not one a
    # capsule sets.
    def self.strays(conn, expiry)
      keys = conn.call("KEYS", "#{PREFIX}*").sort.reject do |key|
        name = key.delete_prefix(PREFIX)
        (CHECKED + KEPT).any? { name.match?(_1) } ||
          (EXPIRING.include?(key) && conn.call("TTL", key).between?(0, expiry))
      end
      keys.to_h { [_1, EXPIRING.include?(_1) ? "TTL #{conn.call("TTL", _1)}" : conn.call("TYPE", _1)] }
    end

    def problems
      PROBLEMS.filter_map do |field, what|
        found = public_send(field)
        "#{what}: #{found}" unless found.respond_to?(:empty?) ? found.empty? : found.zero?
      end
    end
  end

  # What the gem still books while its processes run, once every job has
  # ended, the dead capsules were reaped and two heartbeat periods passed
  # (so that every live capsule's beat has healed its own lists, and every
  # rate's window has passed: RatedLimit.longest_period is shorter): busy
  # slots, in-progress entries, job limits' busy slots and parked jobs (key
  # => length), and what the rates keep (Leftovers::RATES, key => what).
  # All of it should be empty: a slot booked then is a slot leaked, which
  # keeps a job that waits from running; a rate's key left is one an idle
  # rate keeps for good (its live fetchers wake as a window opens, and the
  # first fetch after sends back and forgets what was parked behind it); a
  # fair class's tenant still waiting its turn (`fair_waiting`, key =>
  # tenants) has nothing to wait for, a stale entry no turn removes.
  Booked = Data.define(:busy, :in_progress, :job_limits, :rates, :fair_waiting) do
    def initialize(rates: {}, fair_waiting: {}, **)
      super
    end

    # Waits until two heartbeat periods (`period`) after the last job ended
    # (by the ledger; `ended`: as Fleet#ended), and the longest rate's
    # period, then reads.
    def self.after_jobs(sidekiq, ended, period)
      last = sidekiq.redis { Run.read(_1, ended) }.map(&:end_ns).select(&:finite?).max
      after = [2 * period, RatedLimit.longest_period].max
      wait = last ? ((last - LimitFetchChaos.now_ns) / 1e9) + after : 0
      sleep wait if wait.positive?
      sidekiq.redis { read(_1) }
    end

    def self.read(conn)
      new(busy: Leftovers.lengths(conn, "#{PREFIX}queue:*:busy"),
        in_progress: Leftovers.lengths(conn, "#{PREFIX}capsule:*:inprogress:*"),
        job_limits: Leftovers.lengths(conn, "#{PREFIX}limit:*:busy")
                             .merge(Leftovers.lengths(conn, "#{PREFIX}limit:*:parked")),
        rates: Leftovers.rate_keys(conn), fair_waiting: Leftovers.fair_waiting(conn))
    end

    def problems
      to_h.filter_map do |field, found|
        "#{field.to_s.tr("_", " ")} still booked 2 heartbeat periods after the last job ended: #{found}" if found.any?
      end
    end
  end
end
