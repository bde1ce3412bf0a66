# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    module Web
      # Methods of the tab's routes and views, mixed into Sidekiq::Web's
      # Action, which every extension shares: each is prefixed limit_fetch_.
      module Helpers
        # The page; with ?refresh=N it reloads itself every N seconds (a
        # Refresh header: no script).
        def limit_fetch_page(error: nil, status: 200)
          @limit_fetch = Overview.new(error: error, refresh: Overview.refresh(url_params("refresh")))
          header "refresh", @limit_fetch.refresh if @limit_fetch.refresh
          page = erb(:limit_fetch_limits, views: VIEWS)
          status == 200 ? page : [status, env["response_headers"], [page]]
        end

        # Applies the Change the form of +action+ asks for, then shows the
        # page again (a redirect, so that a reload does not post again); a
        # form the Change refuses shows the page with its message, changing
        # nothing.
        def limit_fetch_change(action)
          change = Change.from_form(action, request.params)
        rescue ArgumentError => e
          limit_fetch_page(error: e.message, status: 422)
        else
          change.apply
          redirect limit_fetch_path
        end

        def limit_fetch_path(action = nil)
          action ? "#{root_path}limits/#{action}" : "#{root_path}limits"
        end

        def limit_fetch_stylesheet
          style_tag("limit_fetch/css/limits.css?v=#{VERSION}")
        end

        # A limit as shown: its number, or "none".
        def limit_fetch_limit(value)
          value.nil? ? t("LimitFetchNone") : value.to_s
        end

        # running/limit as a bar: an SVG whose bar width is an attribute, as
        # the page's CSP allows no inline style. Full (and marked) at or over
        # the limit; none without a limit.
        def limit_fetch_bar(running, limit)
          return "" if limit.nil?

          width = limit.zero? ? 100 : [running * 100 / limit, 100].min
          state = running >= limit ? "lf-full" : "lf-room"
          %(<svg class="lf-bar #{state}" viewBox="0 0 100 10" preserveAspectRatio="none" role="img" ) +
            %(aria-label="#{running} / #{limit}"><rect class="lf-track" width="100" height="10"/>) +
            %(<rect class="lf-fill" width="#{width}" height="10"/></svg>)
        end
      end
    end
  end
end
