# frozen_string_literal: true

module LimitFetchBench
  # What the fair section works out from its jobs' records (FairJobs: each
  # job's tenant, start and end inside perform, by Redis's clock, in
  # seconds): the slots held over a window, averaged (each job's time inside
  # the window over the window's length, summed), of the class or of one
  # tenant; when a tenant held `full` slots again; each tenant's first start.
  # The scenarios' figures (FairScenarios) from them.
  module FairFigures
    Record = Data.define(:tenant, :start, :finish, :jid)

    # The step of #regained's search, seconds.
    STEP = 0.01

    module_function

    # Records from the lines FairJobs wrote ("tenant start end jid").
    def records(lines)
      lines.map do |line|
        tenant, start, finish, jid = line.split
        Record.new(tenant, Float(start), Float(finish), jid)
      end
    end

    # The slots held on average over `window` (a Range of times): of every
    # record, or of `tenant`'s; nil for an empty window.
    def held(records, window, tenant: nil)
      from, to = window.minmax
      return nil unless to > from

      mine = tenant ? records.select { _1.tenant == tenant } : records
      mine.sum { [[_1.finish, to].min - [_1.start, from].max, 0].max } / (to - from)
    end

    # {tenant => slots held on average over `window`} for each of `tenants`.
    def shares(records, tenants, window) = tenants.to_h { [_1, held(records, window, tenant: _1)] }

    # Each tenant's share over `window`, and over the time from its start
    # while all of them had work (until the first of them was done, or
    # `fast_at`, when the scenario stopped measuring).
    def shares_of(records, tenants, window, fast_at)
      all_until = [*tenants.map { last_end(records, [_1]) || window.begin }, fast_at].min
      {"shares" => shares(records, tenants, window), "window_s" => (window.end - window.begin).round(3),
       "shares_while_all" => shares(records, tenants, window.begin..all_until),
       "while_all_s" => (all_until - window.begin).round(3)}
    end

    # The seconds from the start of `span` until `tenant` held at least
    # `full` slots on average over the `window` seconds after: the first
    # such moment within `span` (the window too); nil if none.
    def regained(records, tenant, span, full:, window:)
      mine = records.select { _1.tenant == tenant && _1.finish > span.begin }
      at = moments(span.begin, span.end - window).find { held(mine, _1..(_1 + window)) >= full }
      at && (at - span.begin).round(3)
    end

    # Every STEP from `from` to `to`.
    def moments(from, to) = (0..((to - from) / STEP).floor).map { from + (_1 * STEP) }

    # The end of `tenants`' last job; nil if any has none.
    def last_end(records, tenants)
      ends = tenants.map { |tenant| records.select { _1.tenant == tenant }.map(&:finish).max }
      ends.all? ? ends.max : nil
    end

    # The arrivals scenario's figures; `times`: when a was pushed, b and c's
    # push started and ended, and the fast key was set.
    def arrivals(records, times, sizes)
      from = times["bc_pushed"] + sizes.fetch("settle")
      shared = shares_of(records, %w[a b c], from..(from + sizes.fetch("window")), times["fast_at"])
      alone(records, (times["a_pushed"] + sizes.fetch("settle"))..times["bc_start"])
        .merge(regain(records, times, sizes), shared)
    end

    # The class's slots busy over `window`, a tenant alone.
    def alone(records, window)
      {"alone" => held(records, window), "alone_s" => rounded(window.end - window.begin)}
    end

    # When b and c were done (from their push) and how soon a held all the
    # slots again.
    def regain(records, times, sizes)
      done = last_end(records, %w[b c]) or return {"b_and_c_s" => nil, "regained_s" => nil}

      {"b_and_c_s" => (done - times["bc_pushed"]).round(3), "regain_looked_s" => (times["fast_at"] - done).round(3),
       "regained_s" => regained(records, "a", done..times["fast_at"], full: sizes.fetch("full"),
         window: sizes.fetch("regain_window"))}
    end

    # Each tenant's first start from the start of `push` ([start, end]),
    # of those that started before `until_` (when the scenario stopped
    # waiting): the most, the median, how many of `tenants` started; the
    # push's time.
    def first_start_figures(records, tenants, push, until_)
      seconds = first_starts(records.select { _1.start < until_ }, tenants, push[0])
      {"tenants" => tenants.size, "started" => seconds.size, "first_start_max" => rounded(seconds.max),
       "first_start_p50" => rounded(Stats.median(seconds)), "push_seconds" => rounded(push[1] - push[0])}
    end

    # The seconds from `since` to each of `tenants`' first start, of those that started.
    def first_starts(records, tenants, since)
      firsts = records.group_by(&:tenant).transform_values { |list| list.map(&:start).min }
      tenants.filter_map { firsts[_1]&.-(since) }
    end

    def rounded(seconds) = seconds&.round(3)
  end
end
