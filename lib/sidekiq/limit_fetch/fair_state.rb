# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # How a fair class's slots are shared now, seen from one tenant
    # (JobLimit#fair, FairShares): its share is the class's limit in force
    # times its weight over the weights of the tenants with work (running or
    # parked jobs), itself included.
    #
    #   state.to_s  # => "tenant acme: 3 of its fair 3.3 of 10, 4 tenants with work"
    #
    # A fair queue's tenant (`fair_limits:`) seen apart from its queue (the
    # CLI's `list --job`, the tab's job limits) names the queue: "tenant
    # acme in queue imports: ...", and its #to_h has +queue+: "imports".
    class FairState
      # +of+: the class's limit in force (nil when unknown); +queue+: the
      # fair queue whose slots it shares, when given (nil for a class's).
      attr_reader :id, :of, :queue

      # +id+: the tenant's limit id (a key's; a fair queue's keyless job's,
      # its class's); +tenants+: the FairTenants with work; +of+: the
      # class's limit in force; +group+: the id of the limit whose slots it
      # shares, to name a fair queue's.
      def initialize(id, tenants, of, group: nil)
        @id = id
        @tenants = tenants
        @of = of
        @queue = JobLimitId.queue(group) if group
        @own = tenants.find { |tenant| tenant.id == id }
      end

      # {tenant:, running:, weight:, share:, of:, tenants:} (and +queue+ for
      # a fair queue's, when given); weight and share nil for a tenant with
      # no work (its jobs carry its weight), share nil too when the class's
      # limit is unknown.
      def to_h
        h = {tenant: JobLimitId.tenant(@id), running: running, weight: @own&.weight, share: share, of: @of,
             tenants: @tenants.size}
        queue ? h.merge(queue: queue) : h
      end

      def to_s
        tenant = "tenant #{JobLimitId.tenant(@id)}#{" in queue #{queue}" if queue}"
        return "#{tenant}: no jobs; #{with_work} share #{@of || "the class's slots"}" unless @own
        return "#{tenant}: #{running} running, #{with_work} share the class's slots" unless share

        format("%<tenant>s: %<running>d of its fair %<share>.1f of %<of>d, %<with_work>s",
          tenant: tenant, running: running, share: share, of: @of, with_work: with_work)
      end

      # A share (#to_h's +share+ of +of+) in a table's cell: "fair 3.3/10"
      # ("fair ?" when unknown).
      def self.short(share, of)
        share ? format("fair %<share>.1f/%<of>d", share: share, of: of) : "fair ?"
      end

      # Its jobs running now.
      def running = @own&.running || 0

      # Its share of the class's slots (a Float), nil without work or a
      # known limit.
      def share
        return unless @own && @of

        @of * @own.weight / @tenants.sum(&:weight)
      end

      private

      def with_work = "#{@tenants.size} #{@tenants.size == 1 ? "tenant" : "tenants"} with work"
    end
  end
end
