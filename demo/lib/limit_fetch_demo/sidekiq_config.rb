# frozen_string_literal: true

module LimitFetchDemo
  # What an app's config/sidekiq.yml says about its queues and their limits:
  # the queue names in order, limits and process limits by queue name, and
  # the threads per process.
  SidekiqConfig = Data.define(:queues, :limits, :process_limits, :concurrency) do
    def self.load(path)
      config = YAML.safe_load_file(path)
      new(queues: config.fetch("queues").map { |entry| Array(entry).first.to_s },
        limits: config.fetch("limits", {}).transform_keys(&:to_s),
        process_limits: config.fetch("process_limits", {}).transform_keys(&:to_s),
        concurrency: config.fetch("concurrency"))
    end
  end
end
