# frozen_string_literal: true

module LimitFetchBench
  # Pushes the keyed section's workloads as an application does, through the
  # gem's client middleware, which computes the limits each job carries.
  # Returns the number of jobs pushed.
  class KeyedPusher < Pusher
    include KeyedVariants

    def initialize(url)
      super
      @config.client_middleware.add(Sidekiq::LimitFetch::ClientMiddleware)
    end

    # `count` jobs, tenant = their index: a distinct key each, if keyed.
    def distinct(count, keyed)
      bulk_of(keyed ? DistinctKeyJob : UnkeyedTenantJob, Array.new(count) { [_1] })
    end

    # `hot` jobs of the hot tenant first in line, then 10 jobs of each of 100
    # other tenants, interleaved.
    def hot_key(hot, keyed)
      cold = Array.new(COLD_JOBS) { ["cold-#{_1 % COLD_TENANTS}"] }
      bulk_of(keyed ? TenantJob : UnkeyedTenantJob, Array.new(hot) { [HOT_TENANT] } + cold)
    end

    private

    # Sidekiq pops a queue in the order push_bulk was given.
    def bulk_of(job_class, args)
      args.each_slice(1_000) do |slice|
        @client.push_bulk("class" => job_class, "queue" => Variant::QUEUE, "retry" => false, "args" => slice)
      end
      args.size
    end
  end
end
