# frozen_string_literal: true

module LimitFetchBench
  # Counts client round trips, where the clients make them:
  # - Ruby: a redis-client middleware on Sidekiq's own connections; every
  #   call (BRPOP included) and every pipeline or MULTI block is one.
  # - Rust core: every call into Sidekiq::LimitFetch::Native, at the cost of
  #   the requests it sends one after another (fetch: one EVALSHA; release:
  #   one LREM; requeue: one MULTI pipeline; beat: register, reconcile and
  #   SMEMBERS, 3 while no other capsule is registered). The measuring side
  #   adds the EVAL fallbacks it sees in commandstats (one extra each).
  module RoundTrips
    NATIVE_COST = {fetch: 1, release: 1, requeue: 1, register: 1, deregister: 1, beat: 3,
                   limit: 1, set_limit: 1, set_default_limits: 1, busy: 1}.freeze

    @lock = Mutex.new
    @counts = {"ruby" => 0, "rust" => 0}

    class << self
      def count(side, calls = 1)
        @lock.synchronize { @counts[side] += calls }
      end

      def snapshot = @lock.synchronize { @counts.dup }

      def install
        Sidekiq::LimitFetch::Native.prepend(NativeCalls)
      end
    end

    # Prepended to the gem's native class.
    module NativeCalls
      NATIVE_COST.each do |name, cost|
        define_method(name) do |*args|
          RoundTrips.count("rust", cost)
          super(*args)
        end
      end
    end

    # Given to Sidekiq's redis-client configuration (`middlewares:`).
    module RedisMiddleware
      def call(command, config)
        RoundTrips.count("ruby")
        super
      end

      def call_pipelined(commands, config)
        RoundTrips.count("ruby")
        super
      end
    end
  end
end
