# frozen_string_literal: true

module LimitFetchBench
  # The ways bench/profile.rb compares, each a call that takes one job on a
  # client, acknowledging the one it took before (`last`), and returns it:
  # BRPOP (BasicFetch), LMOVE and LREM pipelined (a reliable fetch, as
  # Sidekiq Pro's super_fetch), the gem's hand-over pipeline
  # (src/capsule/hand_over/) and its fetch script (src/lua/fetch/); and,
  # for jobs that each carry a key limit of their own (concurrency 1), the
  # script, and two floors of what a fetch of such a job must send: the
  # hand-over's pipeline with the key's slot freed and booked (a second
  # round trip, as the key is known only once the job is read), and the
  # same commands in one call of a function of ProfileFloor's. The floors
  # act on no check they read: they measure a cost, not a fetch.
  class ProfileWays
    Keys = Sidekiq::LimitFetch::Keys
    QUEUE = "profile"
    LIST = Keys.queue(QUEUE)
    UUID = "c0ffee00-0000-4000-8000-000000000000"
    DIGEST = "0" * 40
    # The queue's state a hand-over reads after its move.
    STATE = [Keys.limit(QUEUE), Keys.process_limit(QUEUE), Keys.paused(QUEUE), Keys.rate(QUEUE), Keys::RATE_DUE].freeze
    # A keyed job's limit id, read from its payload's head, where the client
    # middleware writes its limits (spec/fixtures/job_limit_payloads.json).
    HEAD_ID = /\A\{"limit_fetch":\[\{"id":"([^"]*)"/

    # `fetch`: the fetch script's function name in Redis.
    def initialize(fetch)
      @fetch = fetch
    end

    # {label => [way, queue limit or nil, whether its jobs carry a key limit]}
    def all
      {
        "BRPOP (BasicFetch)" => [method(:brpop), nil, false],
        "LMOVE + LREM pipelined" => [method(:reliable), nil, false],
        "hand-over pipeline" => [method(:hand_over), nil, false],
        "fetch script, no limit" => [method(:script), nil, false],
        "fetch script, limit 100" => [method(:script), 100, false],
        "fetch script, a key per job" => [method(:script), nil, true],
        "keyed pipeline, 2 round trips (floor)" => [method(:keyed_pipeline), nil, true],
        "keyed function, 1 round trip (floor)" => [method(:keyed_function), nil, true]
      }
    end

    # The payload of job `index`: with `keyed`, as the client middleware
    # writes a job of a key limit of its own (the limits, then the queue,
    # first), a key per job.
    def self.job(index, keyed)
      job = {"class" => "NoopJob", "args" => [], "jid" => format("%024x", index)}
      return JSON.generate(job) unless keyed

      id = Sidekiq::LimitFetch::JobLimitId.of_key("Profile", index)
      JSON.generate({"limit_fetch" => [{"id" => id, "concurrency" => 1}], "queue" => QUEUE}.merge(job))
    end

    def brpop(client, _thread, _last) = client.call("BRPOP", LIST, 2)&.last

    def reliable(client, thread, last)
      client.pipelined do |pipe|
        pipe.call("LREM", in_progress(thread), 1, last) if last
        pipe.call("LMOVE", LIST, in_progress(thread), "RIGHT", "LEFT")
      end.last
    end

    def hand_over(client, thread, last)
      client.pipelined do |pipe|
        if last
          pipe.call("LREM", in_progress(thread), 1, last)
          pipe.call("HDEL", Keys::RECOVERIES, DIGEST)
        end
        pipe.call("LMOVE", LIST, in_progress(thread), "RIGHT", "LEFT")
        pipe.call("MGET", *STATE)
        pipe.call("LLEN", Keys.busy(QUEUE))
      end[last ? 2 : 0]
    end

    # The fetch script's arguments: no hand-over to decide, one acknowledgement.
    NO_HAND_OVER = ["", "0", "", "", "", "0"].freeze

    def script(client, thread, last)
      acks = last ? [QUEUE, last, DIGEST] : []
      reply = client.call("FCALL", @fetch, 0, capsule(thread), "0", 100, acks.size / 3, *NO_HAND_OVER, *acks, QUEUE)
      reply && reply[1]
    end

    # The first round trip frees the last job's key slot as it moves the
    # next job; the second books the next job's, whose key it has read.
    def keyed_pipeline(client, thread, last)
      job = client.pipelined do |pipe|
        acknowledge_keyed(pipe, thread, last) if last
        pipe.call("LMOVE", LIST, in_progress(thread), "RIGHT", "LEFT")
        pipe.call("MGET", *STATE)
      end[last ? 3 : 0]
      book_key(client, thread, job) if job
      job
    end

    def keyed_function(client, thread, last)
      acknowledged = last ? ProfileFloor.acknowledged(last[HEAD_ID, 1]) : ["", ""]
      client.call("FCALL", ProfileFloor::NAME, 0, in_progress(thread), LIST, capsule(thread), last || "",
        *acknowledged, *ProfileFloor::AROUND_ID, *STATE)
    end

    private

    def in_progress(thread) = Keys.in_progress(capsule(thread), QUEUE)

    # Each thread a capsule of its own, as the script's acknowledgements
    # name the capsule whose slots they free.
    def capsule(thread) = "#{UUID}#{thread}"

    # As the script acknowledges a keyed job: out of the in-progress list,
    # its slot freed, and whether its key has parked jobs to send back.
    def acknowledge_keyed(pipe, thread, last)
      id = last[HEAD_ID, 1]
      pipe.call("LREM", in_progress(thread), 1, last)
      pipe.call("LREM", Keys.job_busy(id), 1, capsule(thread))
      pipe.call("EXISTS", Keys.parked(id))
    end

    # The slot booked first (RPUSH's reply is the key's count with it, to
    # check against its limit), its stored limit, and whether parked jobs
    # of the key would be overtaken.
    def book_key(client, thread, job)
      id = job[HEAD_ID, 1]
      client.pipelined do |pipe|
        pipe.call("RPUSH", Keys.job_busy(id), capsule(thread))
        pipe.call("GET", Keys.job_limit(id))
        pipe.call("EXISTS", Keys.parked(id))
      end
    end
  end

  # The library of ProfileWays#keyed_function, which Profile loads with the
  # gem's: keyed_pipeline's commands in one call. It builds the moved job's
  # key names in Lua, from the text Keys writes around an id (AROUND_ID),
  # and reads the id as keyed_pipeline does, from the payload's head.
  module ProfileFloor
    NAME = "profile_floor"
    SECOND = "profile_floor_second"
    MARK = "<id>"
    AROUND_ID = %i[job_busy job_limit parked].flat_map do |name|
      Sidekiq::LimitFetch::Keys.public_send(name, MARK).partition(MARK).values_at(0, 2)
    end.freeze

    # ARGV: in-progress list, queue, capsule, acknowledged job or "", its
    # busy list and parked list (or "", ""), AROUND_ID's six parts, then
    # the queue's state keys.
    LIBRARY = <<~LUA.freeze
      #!lua name=#{NAME}
      local function key(argv, at, id) return argv[at] .. id .. argv[at + 1] end
      redis.register_function('#{NAME}', function(_, argv)
        local in_progress, capsule, last = argv[1], argv[3], argv[4]
        if last ~= '' then
          redis.call('LREM', in_progress, 1, last)
          redis.call('LREM', argv[5], 1, capsule)
          redis.call('EXISTS', argv[6])
        end
        local job = redis.call('LMOVE', argv[2], in_progress, 'RIGHT', 'LEFT')
        redis.call('MGET', unpack(argv, 13))
        if not job then return false end
        local id = string.match(job, '^{"limit_fetch":%[{"id":"([^"]*)"')
        local busy = key(argv, 7, id)
        redis.call('LLEN', busy)
        redis.call('GET', key(argv, 9, id))
        redis.call('EXISTS', key(argv, 11, id))
        redis.call('RPUSH', busy, capsule)
        return job
      end)
      -- ProfileKeyedWays#second_function's. ARGV: heartbeat, in-progress
      -- list, capsule, the acknowledged job's busy list, parked list and
      -- payload (or "" x 3), the moved job's busy list, stored limit,
      -- back-off and parked list.
      redis.register_function('#{SECOND}', function(_, argv)
        local capsule = argv[3]
        if argv[6] ~= '' then
          if redis.call('EXISTS', argv[1]) == 1 then redis.call('LREM', argv[4], 1, capsule) end
          redis.call('LREM', argv[2], 1, argv[6])
        end
        local n = redis.call('RPUSH', argv[7], capsule)
        local values = redis.call('MGET', argv[8], argv[9])
        local parked = redis.call('EXISTS', argv[10], argv[5] ~= '' and argv[5] or argv[10])
        return {n, values, parked}
      end)
    LUA

    # The acknowledged job's busy and parked lists.
    def self.acknowledged(id) = [Sidekiq::LimitFetch::Keys.job_busy(id), Sidekiq::LimitFetch::Keys.parked(id)]
  end
end
