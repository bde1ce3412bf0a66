# frozen_string_literal: true

module LimitFetchChaos
  # What the gem (and the run) left in Redis once every process has stopped;
  # all of it should be empty: busy lists and in-progress lists (key =>
  # length), any key of a capsule, the registered capsules, any key of a job
  # limit (busy and parked lists: key => length), the set of job limits with
  # parked jobs, jobs still queued (queue => count), the dead set's size,
  # and any other key of the gem's but those it keeps by design (`strays`,
  # key => type; see KEPT and OUTAGE).
  Leftovers = Data.define(:busy, :in_progress, :capsule_keys, :capsules, :job_limit_keys, :parked, :queued, :dead,
    :strays) do
    def initialize(strays: {}, **)
      super
    end
  end

  class Leftovers
    PROBLEMS = {busy: "busy slots still held", in_progress: "in-progress lists left",
                capsule_keys: "keys of capsules left", capsules: "capsules still registered",
                job_limit_keys: "keys of job limits left (busy slots, parked jobs)",
                parked: "job limits still listed as having parked jobs",
                queued: "jobs still queued", dead: "jobs in the dead set",
                strays: "other keys of the gem's left"}.freeze
    # The gem's keys that outlive its processes by design: the configured
    # queue limits, the counts of each job's recoveries from dead capsules
    # (kept 7 days: a poison pill is told by them) and of discards.
    KEPT = [/\Aqueue:[^:]+:(process_)?limit\z/, /\Arecoveries\z/, /\Adiscarded\z/].freeze
    # Set by a capsule that comes back from an outage (or a freeze) longer
    # than its heartbeat's expiry: nobody reaps while it exists. It expires
    # by itself one expiry later, so it may be left while that TTL runs; a
    # key without a TTL, or a longer one, would stop reaping for good.
    OUTAGE = KEYS::OUTAGE
    # Likewise the last beat's key (see src/keys.rs): a capsule killed
    # while it was the last to beat leaves it until its TTL runs out.
    EXPIRING = [OUTAGE, KEYS::LAST_BEAT].freeze
    # The other kinds of keys, each checked as its own field above.
    CHECKED = [/\Aqueue:[^:]+:busy\z/, /\Acapsule:/, /\Acapsules\z/, /\Aregistered\z/, /\Alimit:/, /\Aparked\z/].freeze

    # `expiry`: a heartbeat's, in seconds (the outage key's longest TTL).
    def self.read(conn, queues, expiry: Plan::EXPIRY)
      new(busy: lengths(conn, KEYS::BUSY_PATTERN), in_progress: lengths(conn, KEYS.in_progress("*", "*")),
        capsule_keys: conn.call("KEYS", "#{PREFIX}capsule:*").sort,
        capsules: conn.call("SUNION", KEYS::CAPSULES, KEYS::REGISTERED).sort,
        job_limit_keys: sizes(conn, "#{PREFIX}limit:*"), parked: conn.call("SMEMBERS", KEYS::PARKED).sort,
        queued: queued(conn, queues),
        dead: conn.call("ZCARD", "dead"), strays: strays(conn, expiry))
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

    # key => what it is, of the gem's keys neither checked above nor kept by
    # design; the outage and last beat's keys only if their TTL is not one a
    # capsule sets.
    def self.strays(conn, expiry)
      keys = conn.call("KEYS", "#{PREFIX}*").sort.reject do |key|
        name = key.delete_prefix(PREFIX)
        (CHECKED + KEPT).any? { name.match?(_1) } ||
          (EXPIRING.include?(key) && conn.call("TTL", key).between?(1, expiry))
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
  # (so that every live capsule's beat has healed its own lists): busy
  # slots, in-progress entries, job limits' busy slots and parked jobs (key
  # => length). All of it should be empty: a slot booked then is a slot
  # leaked, which keeps a job that waits from running.
  Booked = Data.define(:busy, :in_progress, :job_limits) do
    # Waits until two heartbeat periods (`period`) after the last job ended
    # (by the ledger; `ended`: as Fleet#ended), then reads.
    def self.after_jobs(sidekiq, ended, period)
      last = sidekiq.redis { Run.read(_1, ended) }.map(&:end_ns).select(&:finite?).max
      wait = last ? ((last - LimitFetchChaos.now_ns) / 1e9) + (2 * period) : 0
      sleep wait if wait.positive?
      sidekiq.redis { read(_1) }
    end

    def self.read(conn)
      new(busy: Leftovers.lengths(conn, "#{PREFIX}queue:*:busy"),
        in_progress: Leftovers.lengths(conn, "#{PREFIX}capsule:*:inprogress:*"),
        job_limits: Leftovers.lengths(conn, "#{PREFIX}limit:*:busy")
                             .merge(Leftovers.lengths(conn, "#{PREFIX}limit:*:parked")))
    end

    def problems
      to_h.filter_map do |field, found|
        "#{field.to_s.tr("_", " ")} still booked 2 heartbeat periods after the last job ended: #{found}" if found.any?
      end
    end
  end
end
