# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # How a fair class's slots are shared now, seen from one tenant
    # (JobLimit#fair): its share is the class's limit in force times its
    # weight over the weights of the tenants with work (running or parked
    # jobs), itself included.
    #
    #   state.to_s  # => "tenant acme: 3 of its fair 3.3 of 10, 4 tenants with work"
    class FairState
      # +id+: the tenant's key limit id; +tenants+: the FairTenants with
      # work; +of+: the class's limit in force.
      def initialize(id, tenants, of)
        @id = id
        @tenants = tenants
        @of = of
        @own = tenants.find { |tenant| tenant.id == id }
      end

      # {tenant:, running:, weight:, share:, of:, tenants:}; weight and share
      # nil for a tenant with no work (its jobs carry its weight).
      def to_h
        {tenant: JobLimitId.key(@id), running: @own&.running || 0, weight: @own&.weight,
         share: share, of: @of, tenants: @tenants.size}
      end

      def to_s
        tenant = "tenant #{JobLimitId.key(@id)}"
        with_work = "#{@tenants.size} #{@tenants.size == 1 ? "tenant" : "tenants"} with work"
        return "#{tenant}: no jobs; #{with_work} share #{@of}" unless @own

        format("%<tenant>s: %<running>d of its fair %<share>.1f of %<of>d, %<with_work>s",
          tenant: tenant, running: @own.running, share: share, of: @of, with_work: with_work)
      end

      private

      def share
        return unless @own

        @of * @own.weight / @tenants.sum(&:weight)
      end
    end
  end
end
