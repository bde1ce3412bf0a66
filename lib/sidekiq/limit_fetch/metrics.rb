# frozen_string_literal: true

require "sidekiq/limit_fetch"
require "sidekiq/limit_fetch/prometheus_text"

module Sidekiq
  class LimitFetch < BasicFetch
    # A Rack app serving LimitFetch.stats in Prometheus's text format
    # (0.0.4), for a scrape:
    #
    #   # config.ru
    #   require "sidekiq/limit_fetch/metrics"
    #   map("/limit_fetch/metrics") { run Sidekiq::LimitFetch::Metrics.new }
    #
    #   # config/routes.rb
    #   mount Sidekiq::LimitFetch::Metrics.new => "/limit_fetch/metrics"
    class Metrics
      CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

      QUEUE_GAUGES = {
        limit: ["max_concurrent_jobs",
                "Jobs of the queue that may run at once across all processes (its limit in force, or its fair limit)"],
        process_limit: ["process_max_concurrent_jobs", "Jobs of the queue that may run at once in each process"],
        running: ["current_concurrent_jobs", "Jobs of the queue running now across all processes"],
        queued: ["queue_jobs", "Jobs waiting in the queue's list"],
        parked: ["queue_parked_jobs", "Jobs of the queue parked at their job limits or rates, waiting to go back"],
        latency: ["queue_latency_seconds", "Age of the queue's oldest waiting job, parked ones included, in seconds"],
        paused: ["paused", "1 while the queue is paused"],
        rate_limit: ["rate_limit", "Jobs of the queue that may start in any window of its rate's period"],
        rate_period: ["rate_period_seconds", "The queue's rate's period, in seconds"],
        rate_starts: ["rate_window_starts", "Jobs of the queue that started in the last period of its rate"]
      }.freeze

      JOB_LIMIT_GAUGES = {
        limit: ["job_limit_max_concurrent_jobs",
                "Jobs of the class (or of the fair queue) that may run at once (its stored limit, or an adaptive " \
                "limit's in force)"],
        running: ["job_limit_current_concurrent_jobs", "Jobs under the class's or scope's limits running now"],
        parked: ["parked_jobs", "Jobs set aside until their class's or key's limit has room"],
        rate_limit: ["rate_job_limit", "Jobs of the class (or each key) that may start in any window of its rate"],
        rate_period: ["rate_job_period_seconds", "The class's (or its keys') rate's period, in seconds"],
        rate_starts: ["rate_job_window_starts",
                      "Jobs of the class or scope started within the last period of its rate"],
        back_off_seconds_left: ["job_limit_back_off_seconds_left",
                                "Seconds the class's (or the scope's longest) back-off has left; 0 when none holds"],
        backing_off: ["job_limit_backing_off", "Limits of the class or scope backing off now (a scope's keys)"]
      }.freeze

      JOB_LIMIT_COUNTERS = {
        back_offs: ["job_limit_back_offs_total",
                    "Back-offs of the class's limit (or of the scope's active keys) since Redis has held the count"]
      }.freeze

      FAIR_CLASS_GAUGES = {
        tenants_with_work: ["fair_tenants_with_work",
                            "Tenants of the fair class (or fair queue) with running or parked jobs"]
      }.freeze

      FAIR_TENANT_GAUGES = {
        share: ["job_limit_fair_share",
                "The tenant's share of its fair class's (or fair queue's) limit in force: the limit times its weight " \
                "over the weights of the tenants with work"],
        running: ["job_limit_fair_current_concurrent_jobs",
                  "Jobs of the fair class's (or fair queue's) tenant running now"]
      }.freeze

      AT_LIMIT = {
        at_limit_seconds: [
          "at_limit_seconds_total",
          "Seconds the queue spent at its global limit with jobs waiting, as seen by this process's scrapes"
        ]
      }.freeze

      # +stats+: what gives the figures (default: LimitFetch.stats).
      def initialize(stats: -> { LimitFetch.stats })
        @stats = stats
      end

      def call(env)
        return [405, {"content-type" => "text/plain", "allow" => "GET, HEAD"}, ["GET only\n"]] unless readable?(env)

        body = self.class.exposition(@stats.call)
        [200, {"content-type" => CONTENT_TYPE}, [env["REQUEST_METHOD"] == "HEAD" ? "" : body]]
      rescue Error, RedisClient::Error => e
        [503, {"content-type" => "text/plain"}, ["sidekiq-limit_fetch: Redis unavailable (#{e.class})\n"]]
      end

      # The text format of a LimitFetch.stats Hash.
      def self.exposition(stats)
        text = PrometheusText.new
        family(text, "gauge", QUEUE_GAUGES, stats[:queues]) { |queue| {queue: queue[:queue]} }
        family(text, "counter", AT_LIMIT, stats[:queues]) { |queue| {queue: queue[:queue]} }
        family(text, "gauge", JOB_LIMIT_GAUGES, stats[:job_limits]) { |limit| limit.slice(:kind, :scope) }
        family(text, "counter", JOB_LIMIT_COUNTERS, stats[:job_limits]) { |limit| limit.slice(:kind, :scope) }
        fair_families(text, stats)
        text.to_s
      end

      # A fair class's tenants with work; per tenant, its share and running
      # jobs. A fair queue's series are labelled queue="imports" where a
      # class's are class="SyncJob".
      def self.fair_families(text, stats)
        family(text, "gauge", FAIR_CLASS_GAUGES, stats.fetch(:fair_classes, [])) { |fair| fair.slice(:class, :queue) }
        family(text, "gauge", FAIR_TENANT_GAUGES, stats.fetch(:fair_tenants, [])) do |tenant|
          tenant.slice(:class, :queue, :scope, :key)
        end
      end

      # One metric per field of +metrics+, a sample per row whose field is
      # not nil, labelled by the block.
      def self.family(text, type, metrics, rows, &labels)
        metrics.each do |field, (name, help)|
          samples = rows.filter_map { |row| [labels.call(row), row[field]] unless row[field].nil? }
          text.metric(name, type, help, samples)
        end
      end

      private

      def readable?(env) = %w[GET HEAD].include?(env["REQUEST_METHOD"])
    end
  end
end
