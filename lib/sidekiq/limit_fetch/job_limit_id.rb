# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # How a job limit is named: in the payloads of its jobs, in the API, and
    # in its Redis keys (src/keys.rs builds them from the id).
    #
    #   class:ExportJob         the class ExportJob's limit
    #   key:SyncJob#42          key "42" of SyncJob (or of the group SyncJob)
    #   key:SyncJob@default#42  key "42" of SyncJob in queue "default" (per_queue)
    #
    # A key is any text; a scope (a class, a group, a queue) never holds "#"
    # (JobLimits checks), so the first "#" ends it and no two ids collide.
    module JobLimitId
      module_function

      def of_class(class_name) = "class:#{class_name}"

      def of_key(scope, key, queue = nil)
        scope = "#{scope}@#{queue}" if queue
        "key:#{scope}##{key}"
      end

      # :class or :key.
      def kind(id) = id.start_with?("key:") ? :key : :class

      # What a key id's keys share: "SyncJob" or "SyncJob@default" (nil for a
      # class id).
      def scope(id) = id[/\Akey:([^#]*)#/, 1]

      # The key of a key id (nil for a class id).
      def key(id) = kind(id) == :key ? id.split("#", 2).last : nil
    end
  end
end
