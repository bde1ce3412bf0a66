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

        # A queue's global limit (Overview::QueueRow) as shown: its number,
        # "none", "7 (1..20)" for an adaptive one (its limit in force and
        # its range); a fair queue's fair limit, "fair 10" (after a limit
        # it has too: "5, fair 10").
        def limit_fetch_queue_limit(row)
          text = limit_fetch_own_limit(row)
          return text unless row.fair_limit

          fair = t("LimitFetchFairLimit", limit: row.fair_limit)
          row.limit.nil? ? fair : "#{text}, #{fair}"
        end

        def limit_fetch_own_limit(row)
          adaptive = row.adaptive
          return limit_fetch_limit(row.limit) unless adaptive

          "#{adaptive[:value]} (#{adaptive[:floor]}..#{adaptive[:ceiling]})"
        end

        # A job limit's (Overview::JobLimitRow) as shown: its number, "3
        # (default)" for the default its jobs carry, "default" when none
        # tells it, "adaptive 7 of 1..20" for an adaptive one.
        def limit_fetch_job_limit(row)
          return t(row.rate ? "LimitFetchNone" : "LimitFetchDefault") if row.limit.nil?
          return t("LimitFetchAdaptive", **row.adaptive) if row.adaptive

          row.default ? t("LimitFetchDefaultLimit", limit: row.limit) : row.limit.to_s
        end

        # A job limit's running jobs and limit as shown: "3 / 4"; a fair
        # class's tenant's against its share, "3 of fair 3.3 of 10" (a fair
        # queue's: "3 of fair 3.3 of 10 in queue imports"; and its own
        # limit, if one is stored).
        def limit_fetch_running_limit(row)
          fair = row.fair
          return "#{row.running} / #{limit_fetch_job_limit(row)}" unless fair

          text = limit_fetch_fair_share(fair)
          text = "#{text} #{t("LimitFetchInQueue", queue: limit_fetch_queue_name(fair.queue))}" if fair.queue
          row.limit ? "#{text} · #{t("LimitFetchOwnLimit", limit: row.limit)}" : text
        end

        # A tenant's running jobs against its share (a FairState).
        def limit_fetch_fair_share(fair)
          return t("LimitFetchFairShareUnknown", running: fair.running) unless fair.share

          t("LimitFetchFairShare", running: fair.running, share: format("%.1f", fair.share), of: fair.of)
        end

        # A fair class's tenants with work as shown under its figures:
        # "shared fairly among its tenants with work: 4"; nothing for another.
        def limit_fetch_fair_tenants(row)
          return "" unless row.tenants

          %(<span class="lf-fair">#{h t("LimitFetchFairAmong", count: row.tenants)}</span>)
        end

        # A job limit's back-off in force as shown: "backing off, 12.3 s left
        # (BackOff from ApiJob, jid ...)" and its Resume button (a form that
        # names the limit as Resume reads it); "-" for none.
        def limit_fetch_back_off(row)
          return "&ndash;" unless row.back_off

          %(<span class="lf-backing-off">#{h JobLimit.back_off_text(row.back_off)}</span>) +
            %(<form class="lf-form lf-resume" method="post" action="#{limit_fetch_path("resume")}">#{csrf_tag}) +
            %(<input type="hidden" name="#{Resume::FIELD}" value="#{QueueField.encode(row.id)}">) +
            %(<input class="btn btn-warn" type="submit" value="#{h t("LimitFetchResume")}"></form>)
        end

        # A rate as shown: "2 / 100 per 60 s", its starts in the window now
        # against its limit, and when the next may start if not now; "none"
        # without one.
        def limit_fetch_rate(rate, window)
          return t("LimitFetchNone") unless rate

          text = t("LimitFetchRateNow", starts: window&.starts || 0, limit: rate.limit,
            period: Rates.seconds_text(rate.period))
          return text unless window&.next_start_in

          "#{text} · #{t("LimitFetchNextStartIn", seconds: format("%.1f", window.next_start_in))}"
        end

        # A queue's name as shown, HTML-escaped: its control characters (a
        # tab, a line break) as escapes, marked, so that "a\nb" and "a b"
        # look different.
        def limit_fetch_queue_name(name)
          h(name).gsub(/[[:cntrl:]]/) { %(<span class="lf-control">#{_1.inspect[1..-2]}</span>) }
        end

        # The value of a form's queue field (QueueField).
        def limit_fetch_queue_field(name)
          QueueField.encode(name)
        end

        # Why the queue's next job is or is not fetched: its Explanation,
        # but that a pause's end is shown as every time of the tab is
        # (#limit_fetch_time), and that jobs parked at their job limits are
        # told of when none is queued.
        def limit_fetch_explanation(queue)
          if queue.reason == :paused
            return t("LimitFetchPausedUntilUnpaused") unless queue.paused_until

            t("LimitFetchPausedUntil", time: limit_fetch_time(queue.paused_until))
          elsif queue.reason == :empty && queue.parked.positive?
            t("LimitFetchParkedOnly", count: queue.parked)
          else
            h(queue.explanation)
          end
        end

        # A time, in the one format of the tab (Explanation.format_time's),
        # with its ISO 8601 form as a title. Not a <time>: Sidekiq's script
        # rewrites every <time> as a fuzzy one ("in 5 minutes").
        def limit_fetch_time(time)
          stamp = time.getutc.iso8601
          %(<span class="lf-time" title="#{stamp}">#{Explanation.format_time(time)}</span>)
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
