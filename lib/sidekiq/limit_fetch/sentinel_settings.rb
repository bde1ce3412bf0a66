# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # Redis Sentinel, as Sidekiq's client is given it (redis-client's
    # `sentinels:` and `name:`): the name of the master the sentinels
    # monitor, and each sentinel as a RedisSettings of its own (its host,
    # port, `sentinel_username`/`sentinel_password`, TLS and timeout).
    # The core asks them where the master is, and asks again when it moves.
    # Its members are listed in shapes.rb, which requires this file.
    class SentinelSettings
      def initialize(master_name:, sentinels:)
        unless master_name.is_a?(String) && !master_name.empty?
          Check.invalid(:master_name, "a non-empty String (the sentinels' name of the master)", master_name)
        end
        super(master_name: master_name.dup.freeze, sentinels: sentinel_list(sentinels))
      end

      # Each sentinel's own inspect hides its password.
      def inspect
        "#<data #{self.class.name} master_name=#{master_name.inspect}, " \
          "sentinels=[#{sentinels.map(&:inspect).join(", ")}]>"
      end
      alias to_s inspect

      def pretty_print(printer)
        printer.text(inspect)
      end

      private

      def sentinel_list(sentinels)
        valid = sentinels.is_a?(Array) && !sentinels.empty? &&
                sentinels.all? { |s| s.is_a?(RedisSettings) && s.sentinel.nil? && s.path.nil? }
        return sentinels.dup.freeze if valid

        Check.invalid(:sentinels, "a non-empty Array of #{RedisSettings.name} (host and port each)",
          sentinels, secret: true)
      end
    end
  end
end
