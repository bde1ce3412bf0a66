# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # How every fair class's slots are shared now, for what lists job limits
    # by id (the CLI's `list --job`, the Web UI's tab, Stats): which of them
    # are tenants, of which class, and each one's FairState. The core reads
    # the classes and their tenants with work in one round trip
    # (NativeAdmin#fair_classes), from what their jobs carry. A fair queue's
    # slots (JobLimitId.of_queue) are one such "class", its jobs' tenants
    # its tenants.
    #
    #   shares = FairShares.read
    #   shares.class_ids                      # => ["class:SyncJob"]
    #   shares.state("key:SyncJob#acme", 10)  # => a FairState (nil for no tenant)
    #   shares.tenants_with_work("class:SyncJob") # => 4
    class FairShares
      def self.read(admin = LimitFetch.admin) = new(admin.fair_classes)

      # +classes+: FairClasses.
      def initialize(classes)
        @classes = classes.to_h { [_1.id, _1] }
        @class_of = classes.flat_map { |fair| fair.tenants.map { [_1.id, fair.id] } }.to_h
      end

      # The ids of the fair classes whose tenants have work.
      def class_ids = @classes.keys

      # The JobLimitStates of +ids+ and then of the fair classes not among
      # them (whose limits in force the shares are of), in one round trip,
      # and what their jobs carry (CarriedLimits, by id): [states, carried].
      def read_states(ids, admin = LimitFetch.admin)
        all = ids | class_ids
        [admin.job_limits(all), CarriedLimits.read(all)]
      end

      # The class limit's id whose slots tenant +id+ shares, or nil.
      def class_of(id) = @class_of[id]

      # How many tenants of class +id+ have work; nil for a class that is
      # not fair (or whose tenants have none).
      def tenants_with_work(id) = @classes[id]&.tenants&.size

      # The FairState of tenant +id+ under its class's limit in force
      # +limit+ (nil when unknown); nil for a limit that is no tenant.
      def state(id, limit)
        class_id = class_of(id)
        FairState.new(id, @classes[class_id].tenants, limit, group: class_id) if class_id
      end

      # The FairStates of every tenant, each under its class's limit in
      # force, by +limits+ ({class id => limit or nil}).
      def states(limits)
        @class_of.map { |id, class_id| state(id, limits[class_id]) }
      end
    end
  end
end
