# frozen_string_literal: true

module LimitFetchBench
  # The keyed hand-over's own commands (src/capsule/hand_over/keyed.rs),
  # for jobs that each carry a key limit of their own, as ProfileWays's
  # calls: each takes one job on a client, acknowledging the one it took
  # before (`last`), and returns it. Like the floors there, they act on no
  # check they read: they measure what the commands cost Redis.
  #
  # - watched: as the gem sends it, a first round trip that watches the
  #   capsule's heartbeat key, moves the next job and reads the queue's
  #   state with that key; a second, a transaction, that frees the
  #   acknowledged job's key slot, acknowledges it, books the moved job's
  #   key and reads its stored limit and back-off and both keys' parked
  #   lists: 10 commands;
  # - plain: the same without WATCH, MULTI and EXEC (7), what busy entries
  #   that name their job would send (an LREM that can only remove its own
  #   job's entry needs no transaction);
  # - second a function: plain's first round trip, then its second as one
  #   call of a function that frees the slot only while the heartbeat key
  #   exists (no WATCH needed).
  class ProfileKeyedWays
    Keys = Sidekiq::LimitFetch::Keys
    HEAD_ID = ProfileWays::HEAD_ID
    # The hand-over's MGET after its move: the queue's state, recovered,
    # class back-off, the fair limit (nil keys here, as in a plain queue).
    STATE = [
      *ProfileWays::STATE, "sidekiq:limit_fetch:recovered",
      Keys.limit(ProfileWays::QUEUE).sub(/limit\z/, "class_back_off"), Keys.job_limit("queue:#{ProfileWays::QUEUE}")
    ].freeze

    # {label => [way, queue limit or nil, whether its jobs carry a key limit]}
    def all
      {
        "keyed hand-over, WATCH/MULTI/EXEC (10)" => [method(:watched), nil, true],
        "keyed hand-over, MULTI/EXEC of the writes only (10)" => [method(:writes_watched), nil, true],
        "keyed hand-over, plain (7)" => [method(:plain), nil, true],
        "keyed hand-over, second a function" => [method(:second_function), nil, true]
      }
    end

    def watched(client, thread, last)
      job = first(client, thread, last, watched: true)
      return unless job

      # (A first job's watch lasts until the next EXEC: the key is not written.)
      client.pipelined do |pipe|
        pipe.call("MULTI") if last
        second(pipe, thread, last, job)
        pipe.call("EXEC") if last
      end
      job
    end

    # As watched, the transaction holding only what writes (the LREMs and
    # the RPUSH), the reads after its EXEC.
    def writes_watched(client, thread, last)
      job = first(client, thread, last, watched: true)
      return unless job

      client.pipelined do |pipe|
        pipe.call("MULTI") if last
        free(pipe, thread, last) if last
        pipe.call("RPUSH", Keys.job_busy(id(job)), capsule(thread))
        pipe.call("EXEC") if last
        read(pipe, last, job)
      end
      job
    end

    def plain(client, thread, last)
      job = first(client, thread, last, watched: false)
      client.pipelined { |pipe| second(pipe, thread, last, job) } if job
      job
    end

    def second_function(client, thread, last)
      job = first(client, thread, last, watched: false)
      return unless job

      freed = last ? [Keys.job_busy(id(last)), Keys.parked(id(last)), last] : ["", "", ""]
      client.call("FCALL", ProfileFloor::SECOND, 0, heartbeat(thread), in_progress(thread), capsule(thread),
        *freed, *booking_keys(id(job)))
      job
    end

    private

    def first(client, thread, last, watched:)
      client.call("SET", heartbeat(thread), "1") unless last
      replies = client.pipelined do |pipe|
        pipe.call("WATCH", heartbeat(thread)) if watched
        pipe.call("LMOVE", ProfileWays::LIST, in_progress(thread), "RIGHT", "LEFT")
        pipe.call("MGET", *STATE, heartbeat(thread))
      end
      replies[watched ? 1 : 0]
    end

    def second(pipe, thread, last, job)
      free(pipe, thread, last) if last
      pipe.call("RPUSH", Keys.job_busy(id(job)), capsule(thread))
      read(pipe, last, job)
    end

    # The acknowledged job's key slot freed, then its acknowledgement.
    def free(pipe, thread, last)
      pipe.call("LREM", Keys.job_busy(id(last)), 1, capsule(thread))
      pipe.call("LREM", in_progress(thread), 1, last)
    end

    # The moved job's key's stored limit and back-off, and both keys' parked lists.
    def read(pipe, last, job)
      _, limit, back_off, parked = booking_keys(id(job))
      pipe.call("MGET", limit, back_off)
      pipe.call("EXISTS", parked, *(last && Keys.parked(id(last))))
    end

    # The moved job's busy list, stored limit, back-off and parked list.
    def booking_keys(id) = [Keys.job_busy(id), Keys.job_limit(id), "#{Keys.job_limit(id)}:back_off", Keys.parked(id)]

    def id(job) = job[HEAD_ID, 1]

    def in_progress(thread) = Keys.in_progress(capsule(thread), ProfileWays::QUEUE)

    def capsule(thread) = "#{ProfileWays::UUID}#{thread}"

    def heartbeat(thread) = Keys.heartbeat(capsule(thread))
  end
end
