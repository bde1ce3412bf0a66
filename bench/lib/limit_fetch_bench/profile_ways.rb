# frozen_string_literal: true

module LimitFetchBench
  # The ways bench/profile.rb compares, each a call that takes one job on a
  # client, acknowledging the one it took before (`last`), and returns it:
  # BRPOP (BasicFetch), LMOVE and LREM pipelined (a reliable fetch, as
  # Sidekiq Pro's super_fetch), the gem's hand-over pipeline
  # (src/capsule/hand_over.rs) and its fetch script (src/lua/fetch.lua).
  class ProfileWays
    Keys = Sidekiq::LimitFetch::Keys
    QUEUE = "profile"
    LIST = Keys.queue(QUEUE)
    UUID = "c0ffee00-0000-4000-8000-000000000000"
    DIGEST = "0" * 40

    # `fetch`: the fetch script's function name in Redis.
    def initialize(fetch)
      @fetch = fetch
    end

    # {label => [way, queue limit or nil]}
    def all
      {
        "BRPOP (BasicFetch)" => [method(:brpop), nil],
        "LMOVE + LREM pipelined" => [method(:reliable), nil],
        "hand-over pipeline" => [method(:hand_over), nil],
        "fetch script, no limit" => [method(:script), nil],
        "fetch script, limit 100" => [method(:script), 100]
      }
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
        pipe.call("MGET", Keys.limit(QUEUE), Keys.process_limit(QUEUE), Keys.paused(QUEUE), Keys.rate(QUEUE),
          Keys::RATE_DUE)
        pipe.call("LLEN", Keys.busy(QUEUE))
      end[last ? 2 : 0]
    end

    # fetch.lua's arguments: no hand-over to decide, one acknowledgement.
    NO_HAND_OVER = ["", "0", "", "", ""].freeze

    def script(client, thread, last)
      acks = last ? [QUEUE, last, DIGEST] : []
      reply = client.call("FCALL", @fetch, 0, "#{UUID}#{thread}", "0", 100, acks.size / 3, *NO_HAND_OVER, *acks, QUEUE)
      reply && reply[1]
    end

    private

    def in_progress(thread) = Keys.in_progress("#{UUID}#{thread}", QUEUE)
  end
end
