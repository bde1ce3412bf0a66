# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # A back-off a job's perform asked for (BackOffMiddleware), held on its
    # thread until Sidekiq acknowledges the job there (UnitOfWork), which
    # then parks it instead: one BackOffRequest, naming the job's narrowest
    # limit.
    module PendingBackOff
      KEY = :sidekiq_limit_fetch_back_off

      module_function

      # Holds a back-off of +seconds+ (nil: the default) for +job+ (a
      # payload as a Hash) on this thread.
      def hold(job, seconds)
        Thread.current[KEY] = [job["jid"].to_s, request(job, seconds)]
      end

      # The BackOffRequest held for +job+ (a payload as fetched), taken, or
      # nil. A back-off held for another job (its acknowledgement never
      # came) is dropped.
      def take(job)
        jid, request = Thread.current[KEY]
        return unless jid

        Thread.current[KEY] = nil
        request if job.include?(%("jid":"#{jid}"))
      end

      # The narrowest limit +job+ carries: a key's, else its class's; else
      # its class as a class that declares none.
      def request(job, seconds)
        ids = carried_ids(job)
        id = ids.find { |each| JobLimitId.kind(each) == :key } || ids.first
        who = (job["wrapped"] || job["class"]).to_s
        BackOffRequest.new(limit: id || JobLimitId.of_class(who), carried: !id.nil?, who: who,
          jid: job["jid"].to_s, seconds: seconds&.to_f)
      end

      # The ids of the limits a payload carries (ClientMiddleware wrote them).
      def carried_ids(job)
        carried = job[ClientMiddleware::FIELD]
        return [] unless carried.is_a?(Array)

        carried.grep(Hash).map { |limit| limit["id"] }.grep(String)
      end
    end
  end
end
