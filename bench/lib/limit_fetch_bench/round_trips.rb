# frozen_string_literal: true

module LimitFetchBench
  # Counts client round trips, where the clients make them:
  # - Ruby: a redis-client middleware on Sidekiq's own connections; every
  #   call (BRPOP included) and every pipeline or MULTI block is one.
  # - Rust core: each capsule counts the requests it sends (a script or a
  #   pipeline is one; the doorbell's EXISTS and its connection set-up count
  #   too), read through Sidekiq::LimitFetch::Native#round_trips.
  module RoundTrips
    @lock = Mutex.new
    @ruby = 0
    @natives = []

    class << self
      def count_ruby
        @lock.synchronize { @ruby += 1 }
      end

      def snapshot
        natives = @lock.synchronize { @natives.dup }
        {"ruby" => @lock.synchronize { @ruby }, "rust" => natives.sum(&:round_trips)}
      end

      def track(native)
        @lock.synchronize { @natives << native }
      end

      def install
        Sidekiq::LimitFetch::Native.singleton_class.prepend(NativeTracking)
      end
    end

    # Prepended to the singleton class of the gem's native class.
    module NativeTracking
      def new(...) = super.tap { RoundTrips.track(_1) }
    end

    # Given to Sidekiq's redis-client configuration (`middlewares:`).
    module RedisMiddleware
      def call(command, config)
        RoundTrips.count_ruby
        super
      end

      def call_pipelined(commands, config)
        RoundTrips.count_ruby
        super
      end
    end
  end
end
