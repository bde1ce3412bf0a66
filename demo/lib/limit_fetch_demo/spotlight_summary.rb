# frozen_string_literal: true

module LimitFetchDemo
  # The closing report's part on the job limits: the hot tenant's backlog
  # parked while the other tenants' jobs ran, and the rate; with what went
  # wrong, if anything (a tenant or the rate over its limit, a job retried,
  # rescheduled or run twice).
  class SpotlightSummary
    # `final`: Spotlight#final; `rated_starts`: Spotlight#rated_starts.
    INDENT = " " * 8

    def initialize(plan, final, rated_starts:, most_hot_parked:)
      @plan = plan
      @final = final
      @rated_starts = rated_starts
      @most_hot_parked = most_hot_parked
    end

    def lines
      ["Tenants (TenantJob: at most #{concurrency} jobs of a tenant at once, across both processes):",
       *hot_lines, *others_lines,
       "Rate (RatedJob: at most #{rate[:limit]} starts in any #{rate[:period]} s, across both processes):",
       *rate_lines, *sets_lines]
    end

    def problems
      [("a tenant ran more than #{concurrency} jobs at once: #{over}" unless over.empty?),
       ("#{most_in_window} rated starts within #{rate[:period]} s, over the rate" if over_rate?),
       ("jobs in Sidekiq's sets: #{in_sets}" unless in_sets.empty?),
       ("#{run_twice} jobs ran more than once" if run_twice.positive?)].compact
    end

    private

    def hot_lines
      ["  #{hot}: #{@plan.hot_jobs} jobs pushed first; at most #{most_at_once(hot)} ran at once, up to " \
       "#{@most_hot_parked} waited parked in Redis;",
       "#{INDENT}its last job started #{seconds(@final[:wait][hot])} after its push"]
    end

    def others_lines
      ["  #{others.size} other tenants: #{others.size * Plan::JOBS_PER_TENANT} jobs pushed behind #{hot}'s " \
       "backlog; each started within #{seconds(others_most(:wait))} of its push,",
       "#{INDENT}#{seconds(hot_behind)} before #{hot}'s last; at most #{others.map { most_at_once(_1) }.max} " \
       "of a tenant at once"]
    end

    # How long after the other tenants' last start the hot tenant's last
    # job started.
    def hot_behind = @final[:last][hot].to_f - others_most(:last)

    def others = @plan.other_tenants

    # The most of a recorded figure (:wait, :last) over the other tenants.
    def others_most(figure) = others.filter_map { @final[figure][_1] }.max.to_f

    def rate_lines
      ["  #{@plan.rated_jobs} jobs: at most #{most_in_window} starts in any #{rate[:period]} s window " \
       "(#{@rated_starts.size} of #{@plan.rated_jobs} starts read as the gem counted them,",
       "#{INDENT}by Redis's clock), over #{seconds(rated_span)} (the rate allows no less than #{seconds(rated_least)})"]
    end

    def rated_span = @rated_starts.empty? ? 0 : @rated_starts.last - @rated_starts.first

    # The least time the rated jobs' starts can span: (⌈jobs / limit⌉ − 1) periods.
    def rated_least = (@plan.rated_jobs.fdiv(rate[:limit]).ceil - 1) * rate[:period]

    def sets_lines
      return ["Sidekiq's retry, scheduled and dead sets: #{in_sets}"] unless in_sets.empty?

      ["Sidekiq's retry, scheduled and dead sets stayed empty: the waiting jobs were parked,",
       "#{INDENT}not retried or rescheduled#{"; no job ran twice" if run_twice.zero?}."]
    end

    # The most of the rated starts within any window of the rate's period (a
    # start at t counts until t + period, strictly, as the gem counts it).
    def most_in_window
      @most_in_window ||= begin
        first = 0
        @rated_starts.each_index.map do |last|
          first += 1 while @rated_starts[last] - @rated_starts[first] >= rate[:period]
          last - first + 1
        end.max || 0
      end
    end

    def over_rate? = most_in_window > rate[:limit]

    def most_at_once(tenant) = @final[:max][tenant].to_i

    # "tenant most, ..." for the tenants over their limit.
    def over = @final[:max].select { _2 > concurrency }.map { |tenant, most| "#{tenant} #{most.to_i}" }.join(", ")

    def in_sets = @final[:sets].select { _2.positive? }.map { |set, size| "#{set} #{size}" }.join(", ")

    def run_twice = @final[:run_twice]

    def seconds(value)
      value = value.to_f
      value < 1 ? "#{(value * 1000).round} ms" : "#{value.round(2)} s"
    end

    def hot = Plan::HOT_TENANT

    def concurrency = TenantJob::CONCURRENCY

    def rate = RatedJob::RATE
  end
end
