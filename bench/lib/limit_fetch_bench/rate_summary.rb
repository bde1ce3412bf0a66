# frozen_string_literal: true

module LimitFetchBench
  # The rate section over its runs:
  # - throughput: as the throughput section's (ThroughputSummary, ratios to
  #   BasicFetch), with each rated variant's ratios to the same jobs with
  #   no limit ("vs_none": of jobs/s and of commands, process CPU and Redis
  #   CPU per job, medians) and whether its rate counted every start;
  # - hot: per variant, the other tenants' first starts (percentiles over
  #   all runs' tenants), the hot backlog's last start against the least
  #   its rate allows, the most hot starts within a window, and the costs
  #   per executed job (medians);
  # - idle: waiting with jobs parked against the blocking wait, and the
  #   pickup latency as windows open (RateIdleSummary).
  class RateSummary
    # Ratio key => the figure, of a rated variant over no limit's.
    VS_NONE = {"jobs_per_s" => nil, "commands" => "commands_per_job", "process_cpu" => "process_cpu_us_per_job",
               "redis_cpu" => "redis_cpu_us_per_job"}.freeze
    HOT_MEDIANS = %w[
      jobs executed rescheduled push_seconds commands_per_executed_job round_trips_per_executed_job
      redis_cpu_us_per_executed_job process_cpu_us_per_executed_job
    ].freeze

    def initialize(runs)
      @groups = runs.select { _1["section"] == "rate" }.group_by { _1["variant"] }
    end

    def to_h
      return {} if @groups.empty?

      {"throughput" => throughput, "hot" => hot, "idle" => idle}
    end

    private

    def present(keys) = keys.select { @groups[_1] }

    def throughput
      rows = present(RateVariants::THROUGHPUT).to_h do |key|
        variant = Variant[key]
        [key, ThroughputSummary.new(variant, @groups[key], @groups[variant.baseline]).to_h.merge(counted(key))]
      end
      rows.to_h { |key, row| [key, row.merge("vs_none" => vs_none(key, row, rows["rate_none"]))] }
    end

    # Whether the rate counted every start, and left nothing parked.
    def counted(key)
      runs = @groups[key]
      {"rate" => runs.first["rate"], "starts_counted_min" => runs.filter_map { _1["starts_counted"] }.min,
       "rate_parked_max" => runs.filter_map { _1["rate_parked"] }.max}
    end

    def vs_none(key, row, none)
      return nil unless none && Variant[key].rate

      VS_NONE.to_h do |name, cost|
        [name, cost ? Stats.ratio(row[cost], none[cost]) : Stats.ratio(median_of(row), median_of(none))]
      end
    end

    def median_of(row) = row["jobs_per_s"]&.fetch("median")

    def hot = present(RateVariants::HOT).to_h { [_1, hot_row(Variant[_1], @groups[_1])] }

    def hot_row(variant, runs)
      {"label" => variant.label, "runs" => runs.size, "hot_jobs" => runs.first["hot_jobs"],
       "rate" => runs.first["rate"], "seconds" => Stats.spread(runs.map { _1["seconds"] })}
        .merge(KeyedSummary.first_starts(runs), backlog(runs), HOT_MEDIANS.to_h { |key| [key, median(runs, key)] })
    end

    # The hot backlog: its last start against the least the rate allows,
    # and the most of its starts within a window, from inside the jobs and,
    # where the gem counted them, from Redis (nil if any run has none).
    def backlog(runs)
      last = Stats.spread(runs.filter_map { _1["hot_last_start_s"] })
      ideal = runs.first["hot_ideal_s"]
      {"hot_last_start_s" => last, "hot_ideal_s" => ideal, "hot_vs_ideal" => last && Stats.ratio(last["median"], ideal),
       "hot_most_in_window_perform" => runs.map { _1["hot_most_in_window_perform"] }.max,
       "hot_most_in_window_counted" => most_counted(runs),
       "hot_starts_counted_min" => runs.filter_map { _1["hot_starts_counted"] }.min}
    end

    # nil unless every run has the figure.
    def most_counted(runs)
      counted = runs.map { _1["hot_most_in_window_counted"] }
      counted.max if counted.all?
    end

    def median(runs, key) = Stats.median(runs.filter_map { _1[key] })

    # Waiting with jobs parked (rate_idle) against the blocking wait
    # (rate_idle_blocking); nil if neither ran.
    def idle
      blocking, parked = RateVariants::IDLE.map { @groups[_1] || [] }
      RateIdleSummary.new({"blocking" => blocking, "parked" => parked}).to_h unless blocking.empty? && parked.empty?
    end
  end
end
