# frozen_string_literal: true

module LimitFetchTools
  # A rate's starts as the gem keeps them, in either shape
  # (src/lua/prelude/rate_shapes.lua): a sorted set (members scored by
  # their start, microseconds of Redis's clock), or in data format 2, for a
  # rate of 64 starts or fewer, a string beside it (its key's `:starts`
  # made `:stamps`) of the starts that counted at its last write. A tool
  # that reads a window reads both (a window moving between them holds its
  # starts in one or the other).
  module WindowStamps
    module_function

    # The key of the string beside the sorted set `starts`.
    def string_key(starts) = starts.sub(/:starts\z/, ":stamps")

    # The commands that read the window of the sorted set `starts`.
    def reads(starts) = [["ZRANGE", starts, 0, -1, "WITHSCORES"], ["GET", string_key(starts)]]

    # {start's name => its time in µs} from the replies to #reads: a set's
    # members, and a string's stamps named "stamp:<µs>" (a later read of the
    # same start names it the same).
    def starts(zrange, string)
      # RESP3 gives [[member, score], ...], RESP2 [member, score, ...].
      members = zrange.flatten.each_slice(2).to_h { |member, score| [member, Integer(Float(score))] }
      members.merge(of_string(string).to_h { ["stamp:#{_1}", _1] })
    end

    # A string's stamps: "s", then little-endian doubles (when it was
    # written, the period, then the stamps, oldest first); a larger rate's
    # mark ("z") or no string holds none.
    def of_string(value)
      value = value&.b
      return [] unless value&.start_with?("s") && value.bytesize >= 17

      value.byteslice(17..).unpack("E*").map { Integer(_1) }
    end
  end
end
