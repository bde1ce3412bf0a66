# frozen_string_literal: true

module LimitFetchChaos
  # The starts the gem counted for each rate (RatedLimit), as it wrote them:
  # every member added to its job limit's starts set (Keys.job_starts),
  # "<capsule>:<microseconds of Redis's clock>" (so each start is told from
  # the others; a leased start's "<capsule>.<thread>#<n>:<its stamp>", and
  # one not spent is taken out again), read from the run's append-only file once the run is over
  # (#read). The file holds every write Redis acknowledged (an fsync before
  # each reply), the gem's functions' writes as the commands they ran,
  # across the outage too, and is never rewritten (the harness turns the
  # rewrite off): what the gem counted, all of it, on Redis's clock, the
  # fetches themselves with no lag to allow for. Read from the sets while
  # the run went on instead, a start that came and left between two reads a
  # period apart went unseen (a driver starved of CPU by a loaded machine
  # missed 18 of 514). What the gem counted then holds to the rate exactly,
  # while the jobs' own starts (RateWindows) hold to it only with
  # RATE_SLACK.
  class RecordedStarts
    # `dir`: the run's Redis directory.
    def self.read(dir, rated = RatedLimit.all)
      ids = rated.to_h { [KEYS.job_starts(_1.id), _1.id] }
      recorded = new(rated.to_h { [_1.id, []] })
      AppendOnlyFile.new(dir).each_command do |name, key, *args|
        recorded.record(ids[key], name, args) if ids.key?(key)
      end
      recorded
    end

    def initialize(seen)
      @seen = seen
      @given_back = Set.new
      @grants = Hash.new { |hash, id| hash[id] = [] }
    end

    # A ZADD's members were counted; a ZREM's (a lease's starts its thread
    # did not spend, given back: src/lua/lease.lua) never started. A ZADD
    # of leased starts (members "<capsule>.<thread>#<n>:<stamp>") is one
    # grant, all of its starts (the script's start is a ZADD of one member
    # "<capsule>:<microseconds>").
    def record(id, name, args)
      if name.casecmp?("ZADD")
        members = args.each_slice(2).map(&:last)
        @seen.fetch(id).concat(members)
        @grants[id] << members.size if members.first&.include?("#")
      elsif name.casecmp?("ZREM")
        @given_back.merge(args)
      end
    end

    # What the leases of rate `id` were: how many grants, of one start and
    # of more, the largest, the starts they held and those given back.
    def leases(id)
      grants = @grants[id]
      leased = @seen.fetch(id).select { _1.include?("#") }.uniq
      {grants: grants.size, of_one: grants.count(1), of_more: grants.count { _1 > 1 }, largest: grants.max || 0,
       starts: grants.sum, given_back: (leased & @given_back.to_a).size}
    end

    # The sorted times (wall-clock ns) of the starts counted for rate `id`.
    def times(id) = (@seen.fetch(id).uniq - @given_back.to_a).map { Integer(_1.split(":").last) * 1000 }.sort
  end
end
