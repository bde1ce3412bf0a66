# frozen_string_literal: true

require "sidekiq/limit_fetch/api/queue_waiting"
require "sidekiq/limit_fetch/api/stats_waiting"

module Sidekiq
  class LimitFetch < BasicFetch
    # Sidekiq's API (and so its Web UI and the autoscalers that read it)
    # counts the jobs parked at their job limits as waiting in their queues:
    # see LimitFetch::Waiting, and :count_parked_as_waiting to turn it off.
    #
    # The gem does not load sidekiq/api (a Sidekiq server that never reads
    # it is 0.3 MB smaller): its classes take the counting as sidekiq/api
    # defines them, whoever loads it and when, or at once if it is loaded.
    module Api
      PREPENDS = {
        Queue: [QueueWaiting, QueuesWaiting],
        Stats: [StatsWaiting, nil]
      }.freeze

      # Prepended to Sidekiq's singleton class: Sidekiq.const_added hears
      # sidekiq/api define each class, before its body runs (the counting
      # calls its methods by super, found when called).
      module Defined
        def const_added(name)
          super
          Api.prepend_to(name)
        end
      end

      def self.prepend_to(name)
        methods, class_methods = PREPENDS[name]
        return if methods.nil? || Sidekiq.autoload?(name)

        klass = Sidekiq.const_get(name, false)
        klass.prepend(methods)
        klass.singleton_class.prepend(class_methods) if class_methods
      end

      def self.install
        Sidekiq.singleton_class.prepend(Defined)
        PREPENDS.each_key { prepend_to(_1) if Sidekiq.const_defined?(_1, false) }
      end
    end
  end
end

Sidekiq::LimitFetch::Api.install
