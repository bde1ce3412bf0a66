# frozen_string_literal: true

require "sidekiq/limit_fetch"
require "limit_fetch_bench/cli_app"
require "limit_fetch_bench/cli_fleet"
require "limit_fetch_bench/keyed_pusher"
require "limit_fetch_bench/fair_pusher"
require "limit_fetch_bench/fair_jobs"
require "limit_fetch_bench/fair_scenarios"
require "limit_fetch_bench/redis_probe"

module LimitFetchBench
  # One run of the fair section (FairVariants): its job classes made
  # (FairJobs) from their declarations, the app (CliApp, made by the
  # section's first run, in the bench's directory) and its `sidekiq`
  # processes (CliFleet) started and registered with the same classes, then
  # the variant's scenarios (FairScenarios). The spec's "declaration" and
  # "weighted_declaration" (Ruby source) win over the defaults; "sizes" over
  # the scenarios' own; "form" "queue" runs the queue form (FairVariants),
  # its processes given a sidekiq.yml of its own (#queue_config).
  # spec/integration/fair_share_processes_spec.rb runs it too, on smaller
  # sizes.
  class FairRun
    # Whether the loaded gem accepts `fair:` in a declaration.
    def self.fair_accepted?
      Sidekiq::LimitFetch::JobLimits.new("LimitFetchBench::FairProbe", FairJobs.declaration(FairVariants::FAIR))
      true
    rescue ArgumentError
      false
    end

    def initialize(spec)
      @spec = spec
      @variant = spec["variant"]
      @dir = File.dirname(spec["log"])
      @redis = RedisClient.config(url: spec["redis_url"]).new_client
    end

    def run
      FairJobs.define(declarations)
      start
      sizes = FairScenarios.sizes(@spec["sizes"])
      driver = FairDriver.new(redis: @redis, pusher: @pusher, fleet: @fleet, sizes:)
      {"declarations" => declarations, "fair_accepted" => FairRun.fair_accepted?, "sizes" => sizes,
       **queue_form, **measure(FairScenarios.new(driver, sizes))}
    ensure
      @fleet&.stop
      @pusher&.close
      @redis.close
    end

    # {class name => declaration} of the variant.
    def declarations
      @declarations ||=
        case @variant
        when "fair_share" then {"FairJob" => fair, "WeightedJob" => weighted}
        when "fair_cost" then {"CostJob" => fair}
        else {"CostJob" => queue? ? FairVariants::QUEUE_KEY : FairVariants::PLAIN_KEY}
        end
    end

    # The queue form's sidekiq.yml: FairJobs::QUEUE's slots fair, or, for
    # fair_cost_plain, the queue limited to as many; nil in the class form.
    def queue_config
      return unless queue?

      option = @variant == "fair_cost_plain" ? "limits" : "fair_limits"
      "#{option}: {#{FairJobs::QUEUE}: #{FairScenarios.sizes(@spec["sizes"]).fetch("slots")}}"
    end

    private

    def queue? = @spec["form"] == "queue"

    # What the queue form adds to the run's figures: its sidekiq.yml and its label.
    def queue_form = queue? ? {"queue_config" => queue_config, "label" => FairVariants::QUEUE_LABELS[@variant]} : {}

    def fair
      @spec["declaration"] || if queue? then FairVariants::QUEUE_KEY
                              elsif FairRun.fair_accepted? then FairVariants::FAIR
                              else FairVariants::STAND_IN
                              end
    end

    def weighted
      @spec["weighted_declaration"] || if !FairRun.fair_accepted? then FairVariants::STAND_IN
                                       elsif queue? then FairVariants::QUEUE_WEIGHTED
                                       else FairVariants::WEIGHTED
                                       end
    end

    def start
      app = CliApp.new(File.join(@dir, "fair_app"), jobs: File.join(__dir__, "fair_jobs"), queue: FairJobs::QUEUE)
      @fleet = CliFleet.new(app.create, @spec, env: {FairJobs::ENV_NAME => JSON.generate(declarations)},
        config: queue_config && app.config(@variant, queue_config))
      @fleet.start(@redis)
      @pusher = FairPusher.new(@spec["redis_url"])
    end

    def measure(scenarios)
      return cost(scenarios) unless @variant == "fair_share"

      (@spec["scenarios"] || FairScenarios::SCENARIOS.keys).to_h do |name|
        [name, scenarios.public_send(name, FairJobs.const_get(FairScenarios::SCENARIOS.fetch(name)))]
      end
    end

    def cost(scenarios)
      probe = RedisProbe.new(@spec["redis_url"])
      {"cost" => scenarios.cost(FairJobs::CostJob, probe)}
    ensure
      probe&.close
    end
  end
end
