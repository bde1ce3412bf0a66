# frozen_string_literal: true

module LimitFetchBench
  # The variants of the fair section (bin/bench --only fair), each run by
  # PROCESSES real `sidekiq` processes of THREADS threads (FairRun) on jobs
  # of 50 ms: fair_share runs the scenarios (FairScenarios) with the class's
  # declaration (FairJob) and the weighted one (WeightedJob); fair_cost and
  # fair_cost_plain measure Redis's CPU per job of the same class (CostJob)
  # declared fair, and with a plain key limit (PLAIN_KEY: each tenant's key
  # limited to the class's 10, and the class to 10, as fair: limits the
  # class: the same slots, the same keys counted, no sharing). The
  # declarations are Ruby source (FairJobs); by default the issue's (FAIR,
  # WEIGHTED) where the gem accepts fair:, else STAND_IN for both (a key
  # limit of 4 under the class's 10: not work-conserving, the figures it
  # gives show the scenarios measure, not what fair: will). Not twinned
  # with --baseline; fair_share runs in the first round, the cost variants
  # in the first --fair-runs rounds.
  #
  # --fair-form queue runs the same variants on the queue form: the
  # queue's 10 slots (`fair_limits:` in the processes' sidekiq.yml,
  # FairRun#queue_config) shared among its jobs' tenants, each job's tenant
  # its key, whose limit (QUEUE_KEY: 100) never binds; the weighted
  # scenario's class declares its weights as `fair:` under a class limit
  # that never binds (QUEUE_WEIGHTED); fair_cost_plain: the same jobs as
  # fair_cost's, the queue limited to 10 (`limits:`) instead.
  module FairVariants
    PROCESSES = 2
    THREADS = 10

    FAIR = "{concurrency: 10, fair: ->(tenant, *) { tenant }}"
    WEIGHTED = "{concurrency: 10, fair: {by: ->(tenant, *) { tenant }, " \
               "weight: ->(tenant, *) { tenant.start_with?(\"gold\") ? 3 : 1 }}}"
    STAND_IN = "{key: ->(tenant, *) { tenant }, concurrency: 4, class_concurrency: 10}"
    PLAIN_KEY = "{key: ->(tenant, *) { tenant }, concurrency: 10, class_concurrency: 10}"
    QUEUE_KEY = "{key: ->(tenant, *) { tenant }, concurrency: 100}"
    QUEUE_WEIGHTED = WEIGHTED.sub("concurrency: 10,", "concurrency: 100,")
    FORMS = %w[class queue].freeze
    # The variants' labels in the queue form.
    QUEUE_LABELS = {"fair_share" => "LimitFetch, fair queue (scenarios a-e)",
                    "fair_cost" => "LimitFetch, fair queue (Redis CPU)",
                    "fair_cost_plain" => "LimitFetch, queue limit 10, key: 100 (Redis CPU)"}.freeze

    # bin/bench --quick's smaller scenarios.
    QUICK = {"alone_jobs" => 2_000, "hot_jobs" => 5_000, "cost_jobs" => 1_000}.freeze

    DEFAULTS = {fetch: :limit_fetch, workload: :fair, limit: nil, concurrency: THREADS, job_seconds: 0,
                baseline: nil, keyed: true}.freeze

    def self.variant(key, label, **) = Variant.new(key:, label:, **DEFAULTS, **)

    ALL = [
      variant("fair_share", "LimitFetch, fair share (scenarios a-e)"),
      variant("fair_cost", "LimitFetch, fair share (Redis CPU)"),
      variant("fair_cost_plain", "LimitFetch, key: 10 and class_concurrency: 10 (Redis CPU)")
    ].to_h { [_1.key, _1] }.freeze

    COST = %w[fair_cost fair_cost_plain].freeze

    module_function

    def of_round(round, options)
      cost = round <= options.fair_runs ? COST : []
      round == 1 ? ["fair_share", *cost] : cost
    end

    # {"tenants" => 20, ...} from ["tenants=20", ...] (--fair-sizes): names
    # of FairScenarios::SIZES, positive numbers.
    def parse_sizes(list)
      list.to_h do |pair|
        name, value = pair.split("=", 2)
        unless FairScenarios::SIZES.key?(name) && value.to_s.match?(/\A\d+(\.\d+)?\z/) && value.to_f.positive?
          raise OptionParser::InvalidArgument, "--fair-sizes: #{pair.inspect} is not NAME=NUMBER (names: " \
                                               "#{FairScenarios::SIZES.keys.join(", ")})"
        end

        [name, value.include?(".") ? value.to_f : value.to_i]
      end
    end

    # What a measuring process of the section needs beside the usual.
    def spec(options)
      # "jobs": each scenario's own (FairScenarios).
      {"processes" => PROCESSES, "threads" => THREADS, "timeout" => 900, "jobs" => 0,
       "form" => options.fair_form, "declaration" => options.fair_declaration,
       "weighted_declaration" => options.fair_weighted_declaration,
       "sizes" => (options.quick ? QUICK : {}).merge(parse_sizes(options.fair_sizes || []))}
    end
  end
end
