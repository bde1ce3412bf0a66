# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # The "Limits" tab of Sidekiq's Web UI, at /limits: per queue what runs
    # against its limits, who runs it, whether it is paused; capsules waiting
    # to be reaped; the busiest keys of keyed job limits. Its forms change a
    # queue's limits and pause it, through the console API
    # (Sidekiq::LimitFetch.queue), like any other process would.
    #
    # Every POST passes Sidekiq::Web's own checks first (8.1: same origin by
    # Sec-Fetch-Site; 8.0: its CSRF token, which the forms carry).
    module Web
      ROOT = File.expand_path("../../../../web", __dir__)
      VIEWS = File.join(ROOT, "views")

      def self.registered(app)
        app.helpers Helpers
        app.get("/limits") { limit_fetch_page }
        Change::ACTIONS.each do |action|
          app.post("/limits/#{action}") { limit_fetch_change(action) }
        end
      end
    end
  end
end
