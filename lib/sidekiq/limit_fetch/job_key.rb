# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # What makes a key (a tenant, an ID) a valid part of a job limit's id:
    # any text, a String, Symbol or Integer valid in its encoding, up to
    # MAX_BYTES in UTF-8 (ids name Redis keys, and travel in every payload).
    module JobKey
      MAX_BYTES = 1024
      TYPES = [String, Symbol, Integer].freeze

      module_function

      # +key+ as UTF-8 text; raises ArgumentError naming +class_name+.
      def checked(class_name, key)
        invalid(class_name, "a String, Symbol, Integer or nil", key.class) unless TYPES.any? { key.is_a?(_1) }
        key = key.to_s.encode(Encoding::UTF_8)
        return key if key.bytesize <= MAX_BYTES

        invalid(class_name, "at most #{MAX_BYTES} bytes", "#{key.bytesize} bytes")
      rescue EncodingError
        invalid(class_name, "text valid in its encoding", "invalid bytes")
      end

      def invalid(class_name, expected, got)
        raise ArgumentError, "sidekiq-limit_fetch: a key of #{class_name} must be #{expected}, got #{got.inspect}"
      end
    end
  end
end
