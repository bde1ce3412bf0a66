# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    module Web
      # How the tab's forms name a queue: the base64url of its name's UTF-8
      # bytes, unpadded (RFC 4648, section 5). A name sent as it is does not
      # always come back as it was: a browser sends a form's line breaks as
      # CR LF, so a form of queue "a\nb" would change a queue "a\r\nb". An
      # encoded name comes back byte for byte, and still names the same queue
      # when the list of queues changed since the page was shown (an index
      # into it would not).
      module QueueField
        NAME = "queue"
        ALPHABET = /\A[A-Za-z0-9_-]*\z/

        module_function

        def encode(name)
          [name.to_s].pack("m0").tr("+/", "-_").delete("=")
        end

        # The name +value+ (a String) encodes; ArgumentError when it encodes
        # none (not base64url, or not UTF-8).
        def decode(value)
          name = bytes(value).force_encoding(Encoding::UTF_8)
          raise ArgumentError, "the queue in the form is not valid UTF-8: #{name.b.inspect}" unless name.valid_encoding?

          name
        end

        def bytes(value)
          raise ArgumentError unless value.match?(ALPHABET)

          "#{value.tr("-_", "+/")}#{"=" * (-value.size % 4)}".unpack1("m0")
        rescue ArgumentError
          raise ArgumentError, "the queue in the form is not one this page sent: #{value.inspect}"
        end
      end
    end
  end
end
