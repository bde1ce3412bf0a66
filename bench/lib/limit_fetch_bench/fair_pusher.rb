# frozen_string_literal: true

module LimitFetchBench
  # Pushes the fair section's jobs as an application does, through the gem's
  # client middleware (KeyedPusher's), which works out their limits.
  class FairPusher < KeyedPusher
    # The jids of the jobs of `job_class` pushed to `queue`, one per
    # arguments of `args`, in their order.
    def bulk_jids(job_class, queue, args)
      args.each_slice(1_000).flat_map do |slice|
        @client.push_bulk("class" => job_class, "queue" => queue, "retry" => false, "args" => slice)
      end
    end
  end
end
