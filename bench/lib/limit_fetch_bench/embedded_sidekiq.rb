# frozen_string_literal: true

module LimitFetchBench
  # A real Sidekiq server in this process (launcher, manager, processors)
  # configured for one variant: its fetch class, concurrency, queue and
  # limit, logging warnings only, its redis-client counting round trips, a
  # Recorder middleware. For LimitFetch, the capsule is set up before the
  # launch, its waiting fetches end on :quiet and it is shut down after the
  # stop, as the gem's :startup, :quiet and :exit hooks do.
  class EmbeddedSidekiq
    attr_reader :config

    def initialize(variant, url:, recorder:, log:)
      @variant = variant
      @config = build_config(url, log)
      @config.server_middleware.add(Recorder::Middleware, recorder)
    end

    def capsule = @config.default_capsule

    # Everything before the first fetch: for LimitFetch, the capsule's client
    # (connection, limits written, registered, heartbeat thread).
    def prepare
      Sidekiq::LimitFetch.setup(capsule) if @variant.limit_fetch?
      self
    end

    def start
      @config.on(:quiet) { Sidekiq::LimitFetch.quiet(capsule) } if @variant.limit_fetch?
      @launcher = Sidekiq::Launcher.new(@config, embedded: true)
      @launcher.run
      self
    end

    def stop
      @launcher&.stop
      Sidekiq::LimitFetch.shutdown(capsule) if @variant.limit_fetch?
    end

    private

    def build_config(url, log)
      config = Sidekiq::Config.new(error_handlers: [], death_handlers: [], timeout: 1)
      config.redis = redis_options(url)
      config.logger = Sidekiq::Logger.new(log, level: :warn)
      config.error_handlers << ->(error, context, _config = nil) { config.logger.error("#{error.inspect} #{context}") }
      share_with_globals(config, url)
      configure_capsule(config)
    end

    def redis_options(url) = {url: url, middlewares: [RoundTrips::RedisMiddleware]}

    # Parts of Sidekiq (the scheduled poller's process count) use the global
    # configuration, as the only one a Sidekiq server has.
    def share_with_globals(config, url)
      Sidekiq.default_configuration.redis = redis_options(url)
      Sidekiq.default_configuration.logger = config.logger
    end

    def configure_capsule(config)
      config.queues = [Variant::QUEUE]
      config.concurrency = @variant.concurrency
      config[:fetch_class] = @variant.limit_fetch? ? Sidekiq::LimitFetch : Sidekiq::BasicFetch
      config.tap { _1[:limits] = {Variant::QUEUE => @variant.limit} if @variant.limit }
    end
  end
end
