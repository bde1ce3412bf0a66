# frozen_string_literal: true

# Loaded by the `sidekiq` processes of sentinel_failover_spec.rb (app.rb
# requires LF_TEST_REQUIRE): Sidekiq's Redis behind the sentinels of
# LF_TEST_SENTINELS (JSON), and a job that records what ran in a file
# rather than in Redis, whose writes a failover may lose.

require "json"
require "sidekiq"

sentinel_redis = {
  url: "redis://#{ENV.fetch("LF_TEST_MASTER_NAME", "mymaster")}",
  sentinels: JSON.parse(ENV.fetch("LF_TEST_SENTINELS"), symbolize_names: true),
  role: :master
}
Sidekiq.configure_server { |config| config.redis = sentinel_redis }
Sidekiq.configure_client { |config| config.redis = sentinel_redis }

module LimitFetchSpec
  # perform(seconds): appends "start <jid> <running> <time>" and "done <jid>
  # <time>" lines to LF_TEST_RECORD (one write each, O_APPEND); <running> is
  # how many of these jobs this process runs at once, itself included.
  class FileRecordedJob
    include Sidekiq::Job

    sidekiq_options retry: false

    @lock = Mutex.new
    @running = 0

    class << self
      def record(line)
        File.open(ENV.fetch("LF_TEST_RECORD"), "a") { |file| file.write("#{line} #{Time.now.to_f}\n") }
      end

      def started
        @lock.synchronize { @running += 1 }
      end

      def finished
        @lock.synchronize { @running -= 1 }
      end
    end

    def perform(seconds)
      self.class.record("start #{jid} #{self.class.started}")
      sleep seconds
      self.class.record("done #{jid}")
    ensure
      self.class.finished
    end
  end
end
