# frozen_string_literal: true

module LimitFetchBench
  # A throughput run (ThroughputRun) of the rate section: its no-op jobs
  # pushed through the gem's client middleware, under the variant's rate
  # (RateVariants::CLASS_RATE, never binding: a class's, ClassRatedJob, or
  # the queue's, set as `:rates` in the capsule's configuration) or with
  # none (UnratedJob). Once done, how many starts the rate counted (all of
  # them: the period outlasts the run) and how many limits were left parked
  # behind a rate (none, if it never bound).
  class RateThroughputRun < ThroughputRun
    def run = super.merge(counted)

    private

    def embedded
      super.tap do |sidekiq|
        sidekiq.config[:rates] = {Variant::QUEUE => RateJobs.rate(RateVariants::CLASS_RATE)} if queue_rate?
      end
    end

    def push
      pusher = RatePusher.new(@spec["redis_url"])
      pusher.same(@variant.rate == :class ? ClassRatedJob : UnratedJob, @jobs)
    ensure
      pusher&.close
    end

    def queue_rate? = @variant.rate == :queue

    def counted
      key = starts_key
      {"rate" => @variant.rate && RateVariants::CLASS_RATE, "starts_counted" => key && @probe.call("ZCARD", key),
       "rate_parked" => @probe.call("ZCARD", GemKeys::RATE_PARKED)}
    end

    # Where the variant's rate counts its starts; nil without a rate.
    def starts_key
      return GemKeys.starts(Variant::QUEUE) if queue_rate?

      GemKeys.job_starts(RateJobs.class_id(ClassRatedJob)) if @variant.rate
    end
  end
end
