# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    class CLI
      # Job limits (JobLimit#to_h) as a text table, one row each, columns
      # aligned: `list --job`.
      class JobTable
        HEADERS = %w[JOB_LIMIT LIMIT RUNNING PARKED BACK_OFF].freeze

        def initialize(limits)
          @limits = limits
        end

        def to_s
          return "no job limit with running or parked jobs\n" if @limits.empty?

          TextTable.render(HEADERS, @limits.map { |limit| row(limit) })
        end

        private

        def row(limit)
          [limit[:id], limit_text(limit), limit[:running].to_s, limit[:parked].to_s, back_off(limit[:back_off])]
        end

        # Its limit in force: "3", "adaptive 7 of 1..20", "-" when unknown;
        # a fair class's tenant's share of it ("fair 3.3/10"; a fair queue's
        # "fair 3.3/10 in queue imports"), and a fair class's (or queue's)
        # tenants with work ("10, fair among 4 tenants").
        def limit_text(limit)
          text = own_limit(limit)
          fair = limit[:fair]
          return text unless fair

          share = fair.key?(:share) ? share(fair) : fair_class(fair[:tenants])
          text == "-" ? share : "#{text}, #{share}"
        end

        def share(fair)
          text = FairState.short(fair[:share], fair[:of])
          fair[:queue] ? "#{text} in queue #{fair[:queue]}" : text
        end

        def own_limit(limit)
          adaptive = limit[:adaptive]
          return "adaptive #{adaptive[:value]} of #{adaptive[:floor]}..#{adaptive[:ceiling]}" if adaptive

          limit[:limit].nil? ? "-" : limit[:limit].to_s
        end

        def fair_class(tenants) = "fair among #{tenants} #{tenants == 1 ? "tenant" : "tenants"}"

        def back_off(state) = state ? JobLimit.back_off_text(BackOffState.new(**state)) : "-"
      end
    end
  end
end
