# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # How a job limit is named: in the payloads of its jobs, in the API, and
    # in its Redis keys (src/keys.rs builds them from the id). The one place
    # that builds ids and reads them back.
    #
    #   class:ExportJob         the class ExportJob's limit
    #   key:SyncJob#42          key "42" of SyncJob (or of the group SyncJob)
    #   key:SyncJob@default#42  key "42" of SyncJob in queue "default" (per_queue)
    #   queue:imports           the slots of the fair queue "imports" (fair_limits:),
    #                           which its jobs' tenants share
    #
    # A key is any text; a scope (a class, a group, a queue) never holds "#"
    # (JobLimits checks), so the first "#" ends it and no two ids collide.
    module JobLimitId
      CLASS = "class:"
      KEY = "key:"
      QUEUE = "queue:"

      # An id read back: +kind+ :class, :key or :queue; +scope+, the class
      # of a class limit, what a key limit's keys share ("SyncJob", or
      # "SyncJob@default" per queue: a group may hold "@", so the queue is
      # not split off), or a fair queue's name; +key+, nil but for a key
      # limit.
      Parts = Data.define(:kind, :scope, :key)

      module_function

      def of_class(class_name) = "#{CLASS}#{class_name}"

      # The limit of fair queue +queue+'s slots (src/keys.rs's fair_queue_id).
      def of_queue(queue) = "#{QUEUE}#{queue}"

      def of_key(scope, key, queue = nil)
        scope = "#{scope}@#{queue}" if queue
        "#{KEY}#{scope}##{key}"
      end

      # The Parts of +id+. Never raises: an id the gem did not write (a job
      # pushed by hand carries any text) reads as a class limit named by its
      # text, without "class:" if it starts with it, as the fetch enforces
      # it like any other.
      def parse(id)
        if id.start_with?(KEY) && id.include?("#")
          scope, key = id.delete_prefix(KEY).split("#", 2)
          Parts.new(kind: :key, scope: scope, key: key)
        elsif id.start_with?(QUEUE) && id.size > QUEUE.size
          Parts.new(kind: :queue, scope: id.delete_prefix(QUEUE), key: nil)
        else
          Parts.new(kind: :class, scope: id.delete_prefix(CLASS), key: nil)
        end
      end

      # :class, :key or :queue.
      def kind(id) = parse(id).kind

      # The fair queue whose slots +id+ is (nil for any other limit).
      def queue(id)
        parts = parse(id)
        parts.scope if parts.kind == :queue
      end

      # What a key id's keys share (nil for a class id).
      def scope(id)
        parts = parse(id)
        parts.scope if parts.kind == :key
      end

      # The key of a key id (nil for a class id).
      def key(id) = parse(id).key

      # How a fair share names the tenant +id+ (a key limit's, or, for a job
      # of a fair queue without a key, its class's): its key, else its scope.
      def tenant(id)
        parts = parse(id)
        parts.key || parts.scope
      end
    end
  end
end
