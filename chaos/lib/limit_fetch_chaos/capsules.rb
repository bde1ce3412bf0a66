# frozen_string_literal: true

module LimitFetchChaos
  # Which process each capsule belongs to, as Redis tells it (the Sidekiq
  # identity, "hostname:pid:nonce", a capsule's :info holds), and the jobs
  # in the in-progress lists of a process's capsules. Remembers what it saw:
  # a capsule reaped while frozen, then killed once woken before it
  # registered again, has neither its membership nor its :info, and still
  # its in-progress lists.
  class Capsules
    def initialize
      @seen = {}
    end

    # The pid of each registered and beating capsule's process (0 for one
    # whose heartbeat expired).
    def pids(conn) = owners(conn).values

    # Registered capsule => its process's pid (0 once its heartbeat expired,
    # unless `beating` is false); its heartbeat holds "1", as v5's.
    def owners(conn, beating: true)
      found = conn.call("SMEMBERS", KEYS::CAPSULES).to_h do |uuid|
        next [uuid, 0] if beating && conn.call("EXISTS", KEYS.heartbeat(uuid)).zero?

        [uuid, owner(conn, uuid)]
      end
      @seen.merge!(found.reject { |_, pid| pid.zero? })
      found
    end

    # Every capsule => pid seen so far, and the registered ones now whether
    # or not their heartbeat is there (a process killed right after an
    # outage, before its first beat, has an expired heartbeat and still
    # holds its jobs).
    def ever_seen(conn) = @seen.merge(owners(conn, beating: false))

    # Queue => the jids in the in-progress lists of the capsules of process
    # `pid` (`owners`: capsule => pid).
    def in_progress(conn, owners, pid)
      lists = owners.filter_map { |uuid, owner| KEYS.in_progress(uuid, "*") if owner == pid }
      keys = lists.flat_map { conn.call("KEYS", _1) }
      keys.group_by { _1.split(":").last }.transform_values do |same|
        same.flat_map { conn.call("LRANGE", _1, 0, -1) }.map { JSON.parse(_1)["jid"] }
      end
    end

    private

    def owner(conn, uuid)
      JSON.parse(conn.call("GET", KEYS.capsule_info(uuid)) || "{}")["identity"].to_s.split(":")[-2].to_i
    end
  end
end
