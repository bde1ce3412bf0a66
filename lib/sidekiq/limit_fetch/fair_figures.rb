# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # Stats's rows of the fair classes (and fair queues): each one's tenants
    # with work, and each tenant's running jobs and share of its class's
    # limit in force (FairState#share; nil when that limit is unknown). A
    # fair queue's slots are such a class: its rows name it by +queue+
    # where a class's name it by +class+.
    #
    #   figures = FairFigures.new(FairShares.read, {"class:SyncJob" => 10, "queue:imports" => 4})
    #   figures.classes # => [{class: "SyncJob", limit: 10, tenants_with_work: 3},
    #                   #     {queue: "imports", limit: 4, tenants_with_work: 2}]
    #   figures.tenants # => [{class: "SyncJob", scope: "SyncJob", key: "acme", running: 4, share: 3.333},
    #                   #     {queue: "imports", scope: nil, key: "PlainJob", running: 1, share: 2.0}, ...]
    class FairFigures
      # +fair+: FairShares; +limits+: {class id => its limit in force, or nil}.
      def initialize(fair, limits)
        @fair = fair
        @limits = limits
      end

      def classes
        @fair.class_ids.map do |id|
          {**group(id), limit: @limits[id], tenants_with_work: @fair.tenants_with_work(id)}
        end
      end

      # A keyless job's tenant (a fair queue's) is its class, as +key+,
      # +scope+ nil.
      def tenants
        @fair.states(@limits).map do |state|
          group = group(@fair.class_of(state.id))
          group.merge(scope: JobLimitId.scope(state.id), key: JobLimitId.tenant(state.id), running: state.running,
            share: state.share&.round(3))
        end
      end

      private

      # How the rows name fair class +id+: {class: "SyncJob"}, or a fair
      # queue's, {queue: "imports"}.
      def group(id)
        parts = JobLimitId.parse(id)
        parts.kind == :queue ? {queue: parts.scope} : {class: parts.scope}
      end
    end
  end
end
