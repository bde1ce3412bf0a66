# frozen_string_literal: true

require "sidekiq"
require "sidekiq/limit_fetch"

# Installs the limited fetch into every capsule of a Sidekiq server. Setup
# waits for :startup, when the configuration (concurrency, queues, limits,
# Sidekiq::LimitFetch.configuration) is final, and ends with one line in the
# log (BootLine); deregistration waits for :exit, when every in-flight job
# has finished or been pushed back.
Sidekiq.configure_server do |config|
  config[:fetch_class] = Sidekiq::LimitFetch
  config.client_middleware { |chain| chain.add Sidekiq::LimitFetch::ClientMiddleware }
  config.server_middleware { |chain| chain.add Sidekiq::LimitFetch::BackOffMiddleware }

  config.on(:startup) do
    # Innermost, after the app's own: they see a job that backs off return.
    config.server_middleware do |chain|
      chain.remove(Sidekiq::LimitFetch::BackOffMiddleware)
      chain.add(Sidekiq::LimitFetch::BackOffMiddleware)
    end
    config.capsules.each_value { |capsule| Sidekiq::LimitFetch.setup(capsule) }
    Sidekiq::LimitFetch::BootLine.log(config)
  end

  # Idle processors block in the fetch: end their wait so they stop at once.
  config.on(:quiet) do
    config.capsules.each_value { |capsule| Sidekiq::LimitFetch.quiet(capsule) }
  end

  config.on(:exit) do
    config.capsules.each_value { |capsule| Sidekiq::LimitFetch.shutdown(capsule) }
  end
end

# Jobs carry their class's and key's limits from the moment they are pushed,
# by clients and by servers (jobs push jobs): see ClientMiddleware.
Sidekiq.configure_client do |config|
  config.client_middleware { |chain| chain.add Sidekiq::LimitFetch::ClientMiddleware }
end
