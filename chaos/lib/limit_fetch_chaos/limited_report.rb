# frozen_string_literal: true

module LimitFetchChaos
  # What the LIMITED classes' jobs showed, as it goes to the report: per
  # class, what was pushed, completed, discarded and lost, and whether the
  # pushes carried their job limits; how many were parked; the signs of
  # each kind of job limit at work (LimitedChecks).
  class LimitedReport < LimitedChecks
    def to_h
      {classes: LIMITED.to_h { [_1.name, class_h(_1.name)] }, **@feeder.limited_h.except(:classes),
       discards: @discards.to_h, per_queue_most: per_queue_most, tuned: @tuned.phases}
    end

    private

    def class_h(name)
      jids = @feeder.limited_jids.fetch(name)
      {enqueued: jids.size, completed: (jids & @completed).size, discarded: (jids & @discards.jids).size,
       lost: (jids & @lost).size, **@feeder.limited_h[:classes].fetch(name)}
    end
  end
end
