# frozen_string_literal: true

module LimitFetchChaos
  # What the gem (and the run) left in Redis once every process has stopped;
  # all of it should be empty: busy lists and in-progress lists (key =>
  # length), any key of a capsule, the registered capsules, jobs still queued
  # (queue => count), and the dead set's size.
  Leftovers = Data.define(:busy, :in_progress, :capsule_keys, :capsules, :queued, :dead)

  class Leftovers
    PROBLEMS = {busy: "busy slots still held", in_progress: "in-progress lists left",
                capsule_keys: "keys of capsules left", capsules: "capsules still registered",
                queued: "jobs still queued", dead: "jobs in the dead set"}.freeze

    def self.read(conn, queues)
      new(busy: lengths(conn, "#{PREFIX}queue:*:busy"), in_progress: lengths(conn, "#{PREFIX}capsule:*:inprogress:*"),
        capsule_keys: conn.call("KEYS", "#{PREFIX}capsule:*").sort,
        capsules: conn.call("SMEMBERS", "#{PREFIX}capsules").sort,
        queued: queues.to_h { [_1, conn.call("LLEN", "queue:#{_1}")] }.select { |_queue, count| count.positive? },
        dead: conn.call("ZCARD", "dead"))
    end

    # key => length of the lists whose key matches (Redis keeps no empty list)
    def self.lengths(conn, pattern) = conn.call("KEYS", pattern).sort.to_h { [_1, conn.call("LLEN", _1)] }

    def problems
      PROBLEMS.filter_map do |field, what|
        found = public_send(field)
        "#{what}: #{found}" unless found.respond_to?(:empty?) ? found.empty? : found.zero?
      end
    end
  end
end
