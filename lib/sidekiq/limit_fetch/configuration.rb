# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    DEFAULTS = {
      # Seconds a fetcher waits for an eligible job before it returns nothing
      # (as BasicFetch's BRPOP): a pushed job, a freed slot or a raised limit
      # ends the wait at once, and so does Sidekiq quieting.
      fetch_timeout: 2,
      # Seconds between looks while waiting, only where Redis cannot notify
      # (an ACL that denies CLIENT TRACKING, or a Redis older than 6).
      poll_range: 0.4..0.5,
      # Seconds between heartbeats; a capsule silent for 4 periods is reaped.
      heartbeat_period: 15,
      # Times a job may be recovered from dead processes; one more and it is
      # a poison pill that goes to the dead set.
      max_recoveries: 3,
      # Jobs at a full class or key limit one fetch may park (or discard)
      # before it stops and looks again: bounds the time one fetch holds
      # Redis when a hot key has a long backlog.
      lookahead: 100,
      # Seconds a queue may stay at its global limit with jobs waiting before
      # its process logs a warning (once per episode; a line when it ends).
      at_limit_warning_after: 60,
      # Whether a job discarded at its limit (`on_limit: :discard`) goes to
      # Sidekiq's death handlers too (with a LimitFetch::Discarded), besides
      # LimitFetch.discard_handlers.
      discards_to_death_handlers: false,
      # Whether Sidekiq's API (Queue#size and #latency, Stats#enqueued,
      # #queues and #queue_summaries, and so its Web UI and autoscalers)
      # counts the jobs parked at their job limits or rates as waiting in
      # their queues; false: Sidekiq's raw list lengths. Read at each call,
      # in every process (web and console ones too).
      count_parked_as_waiting: true,
      # Errors from any job's perform that back its limit off as a BackOff
      # does (exception classes, or their names), besides those its class
      # lists in `limit_fetch: {back_off_on: [...]}` (BackOffMiddleware).
      back_off_on: []
    }.freeze

    @configuration = DEFAULTS.dup

    class << self
      attr_reader :configuration
    end

    # Reads LimitFetch.configuration into the checked options, at boot: a
    # misspelled or removed option stops the boot instead of going unnoticed.
    module Configuration
      module_function

      def capsule_options(configuration = LimitFetch.configuration)
        CapsuleOptions.new(**checked(configuration).slice(*CapsuleOptions.members))
      end

      def fetch_options(configuration = LimitFetch.configuration)
        FetchOptions.new(**checked(configuration).slice(*FetchOptions.members))
      end

      def discards_to_death_handlers(configuration = LimitFetch.configuration)
        Check.boolean(:discards_to_death_handlers, checked(configuration)[:discards_to_death_handlers])
      end

      def checked(configuration)
        problems = problems(configuration)
        return configuration if problems.empty?

        raise ArgumentError, "sidekiq-limit_fetch: #{problems.join(", ")} in Sidekiq::LimitFetch.configuration " \
                             "(its options: #{names(DEFAULTS.keys)})"
      end

      def problems(configuration)
        {
          "unknown" => configuration.keys - DEFAULTS.keys,
          "missing" => DEFAULTS.keys - configuration.keys
        }.filter_map { |what, keys| "#{what} option #{names(keys)}" unless keys.empty? }
      end

      def names(keys)
        keys.map(&:inspect).join(", ")
      end
    end
  end
end
