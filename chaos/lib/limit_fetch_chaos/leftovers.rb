# frozen_string_literal: true

module LimitFetchChaos
  # What the gem (and the run) left in Redis once every process has stopped;
  # all of it should be empty: busy lists and in-progress lists (key =>
  # length), any key of a capsule, the registered capsules, any key of a job
  # limit (busy and parked lists: key => length), the set of job limits with
  # parked jobs, jobs still queued (queue => count), and the dead set's size.
  Leftovers = Data.define(:busy, :in_progress, :capsule_keys, :capsules, :job_limit_keys, :parked, :queued, :dead)

  class Leftovers
    PROBLEMS = {busy: "busy slots still held", in_progress: "in-progress lists left",
                capsule_keys: "keys of capsules left", capsules: "capsules still registered",
                job_limit_keys: "keys of job limits left (busy slots, parked jobs)",
                parked: "job limits still listed as having parked jobs",
                queued: "jobs still queued", dead: "jobs in the dead set"}.freeze

    def self.read(conn, queues)
      new(busy: lengths(conn, KEYS::BUSY_PATTERN), in_progress: lengths(conn, KEYS.in_progress("*", "*")),
        capsule_keys: conn.call("KEYS", "#{PREFIX}capsule:*").sort,
        capsules: conn.call("SUNION", KEYS::CAPSULES, KEYS::REGISTERED).sort,
        job_limit_keys: sizes(conn, "#{PREFIX}limit:*"), parked: conn.call("SMEMBERS", KEYS::PARKED).sort,
        queued: queues.to_h { [_1, conn.call("LLEN", "queue:#{_1}")] }.select { |_queue, count| count.positive? },
        dead: conn.call("ZCARD", "dead"))
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

    def problems
      PROBLEMS.filter_map do |field, what|
        found = public_send(field)
        "#{what}: #{found}" unless found.respond_to?(:empty?) ? found.empty? : found.zero?
      end
    end
  end
end
