# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # The data format the fleet writes and reads in (LimitFetch.data_format,
    # `sidekiq-limits format`; src/format.rs): 1, what every release of the
    # gem and v5 speak, until every live capsule speaks 2, and 1 again as
    # soon as one does not, as the census decides once a heartbeat period;
    # or 1 pinned, which the census leaves be, until unpinned.
    #
    # +format+ (1 or 2); +since+, when it took effect (a Time by Redis's
    # clock; nil: format 1 since forever); +pinned+; +capsules+, each live
    # capsule (a RegisteredCapsule) with the highest format it speaks (1 for
    # one of an older release, or v5's, which does not say).
    DataFormat = Data.define(:format, :since, :pinned, :capsules) do
      def pinned? = pinned

      def to_h
        super.merge(capsules: capsules.map { |capsule, highest| capsule.to_h.merge(format: highest) })
      end

      def to_s
        decided = pinned ? "pinned (the census leaves it until `format auto`)" : "decided by the census"
        since ? "format #{format} since #{since.utc.iso8601(3)}, #{decided}" : "format #{format}, #{decided}"
      end
    end

    class DataFormat
      # What setting it did: +was+ and +now+, the format in force before and
      # after (DataFormats with no capsules), and how many data of format 2
      # went back to format 1 (+converted+).
      Change = Data.define(:was, :now, :converted) do
        def to_h = {was: was.to_h.except(:capsules), now: now.to_h.except(:capsules), converted: converted}
      end

      # What the setter takes: 1 pins format 1, :auto unpins.
      SETTINGS = {"1" => true, "auto" => false}.freeze

      # The format in force on the Redis of +admin+ (a NativeAdmin).
      def self.read(admin)
        in_force, capsules = admin.data_format
        from(in_force, capsules.map { |entry, highest| [RegisteredCapsule.from(entry), highest] })
      end

      # Pins format 1 (+value+ 1) or unpins it (:auto): a Change.
      def self.set(admin, value)
        pin = SETTINGS.fetch(value.to_s) do
          raise ArgumentError, "data format: 1 (pins format 1) or :auto (the census decides), not #{value.inspect}"
        end
        now, was, converted = admin.set_data_format(pin)
        Change.new(was: from(was, []), now: from(now, []), converted: converted)
      end

      # From the binding's [format, since_ms, pinned].
      def self.from((format, since_ms, pinned), capsules)
        since = since_ms.positive? ? Time.at(Rational(since_ms, 1000)).utc : nil
        new(format: format, since: since, pinned: pinned, capsules: capsules)
      end
    end
  end
end
