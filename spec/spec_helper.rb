# frozen_string_literal: true

if ENV["COVERAGE"]
  begin
    require "simplecov"
    SimpleCov.start do
      add_filter "/spec/"
      formatter SimpleCov::Formatter::HTMLFormatter.new(silent: true)
    end
  rescue LoadError
    nil
  end
end

require_relative "support/redis_server"
RedisServer.start

require "sidekiq"
require "sidekiq-limit_fetch"
# Specs read Sidekiq's API, which the gem does not load: loaded after it, as
# an app that reads it may, so its classes take the gem's counting then.
require "sidekiq/api"
require_relative "support/tracked_job"
require_relative "support/keyed_jobs"
require_relative "support/back_off_jobs"
require_relative "support/fair_jobs"
require_relative "support/limit_fetch_helpers"

# The suite runs with a heap that compacts at every major GC, as a Sidekiq
# process's heap is compacted by Process.warmup: a Ruby object the extension
# keeps without pinning it would move under it (see compacted_heap_spec.rb).
GC.auto_compact = true

require_relative "support/gc_stress"
GCStress.install if ENV["LIMIT_FETCH_GC_STRESS"] == "1"

# Sidekiq.default_configuration is not used by the specs (each builds its own
# Sidekiq::Config), but Sidekiq.logger is; keep it quiet.
Sidekiq.default_configuration.logger = Sidekiq::Logger.new(File::NULL)

RSpec.configure do |config|
  config.include LimitFetchHelpers

  config.expect_with :rspec do |expectations|
    expectations.include_chain_clauses_in_custom_matcher_descriptions = true
    expectations.max_formatted_output_length = 2000
  end
  config.mock_with :rspec do |mocks|
    mocks.verify_partial_doubles = true
  end
  config.shared_context_metadata_behavior = :apply_to_host_groups
  config.filter_run_when_matching :focus
  # bin/test runs spec files side by side, each with "" here: none.
  status_file = ENV.fetch("LIMIT_FETCH_RSPEC_STATUS", "tmp/rspec_examples.txt")
  config.example_status_persistence_file_path = status_file unless status_file.empty?
  config.disable_monkey_patching!
  config.warnings = false
  config.order = :random
  Kernel.srand config.seed

  config.before do
    RedisServer.with_client { |conn| conn.call("FLUSHDB") }
    @saved_limit_fetch_configuration = Sidekiq::LimitFetch.configuration.dup
    # Idle fetchers give up quickly so that the specs do not wait on them.
    Sidekiq::LimitFetch.configuration[:fetch_timeout] = 0.05
    Sidekiq::LimitFetch.configuration[:poll_range] = 0.01..0.03
  end

  config.after do |example|
    cleanup_limit_fetch
    Sidekiq::LimitFetch.configuration.replace(@saved_limit_fetch_configuration)
    if example.exception && !spec_log.string.empty?
      lines = spec_log.string.lines
      warn "---- Sidekiq log of #{example.full_description} (last #{[lines.size, 80].min} lines)"
      warn lines.last(80).join
    end
  end
end
