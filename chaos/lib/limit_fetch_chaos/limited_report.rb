# frozen_string_literal: true

module LimitFetchChaos
  # What the LIMITED classes' jobs showed, as it goes to the report: per
  # class, what was pushed, completed, discarded and lost, and whether the
  # pushes carried their job limits; how many were parked; the signs of
  # each kind of job limit at work (LimitedChecks); what the fair classes'
  # tenants got (FairShares).
  class LimitedReport < LimitedChecks
    # `outcome`'s every_run: every run, the frozen process's woken originals
    # too (its runs: those the limits count).
    def initialize(outcome, *)
      super
      @every_run = outcome.fetch(:every_run)
    end

    def to_h
      {classes: LIMITED.to_h { [_1.name, class_h(_1.name)] }, **@feeder.limited_h.except(:classes),
       discards: @discards.to_h, per_queue_most: per_queue_most, tuned: @tuned.phases, fair: fair_h}
    end

    # Per FAIR class, what its tenants got (FairShares).
    def fair_h
      FAIR.to_h do |job_class|
        pushed = @feeder.fair_pushes.fetch(job_class.name)
        [job_class.name, FairShares.new(job_class.name, job_class::TENANTS, @every_run, pushed).to_h]
      end
    end

    private

    def class_h(name)
      jids = @feeder.limited_jids.fetch(name)
      {enqueued: jids.size, completed: (jids & @completed).size, discarded: (jids & @discards.jids).size,
       lost: (jids & @lost).size, **@feeder.limited_h[:classes].fetch(name)}
    end
  end
end
