# frozen_string_literal: true

require "json"

module Sidekiq
  class LimitFetch < BasicFetch
    # A registered capsule, for a control plane: the Sidekiq +identity+ of
    # its process ("host:pid:hex"; nil if it did not say), its +name+
    # ("default" or the capsule's), its +queues+ and +concurrency+, the
    # seconds since its last heartbeat (+heartbeat_age+, nil if unknown),
    # and whether its heartbeat expired (+expired+: it is dead, waiting for
    # another process's heartbeat to reap it).
    RegisteredCapsule = Data.define(:uuid, :identity, :name, :queues, :concurrency, :heartbeat_age, :expired)

    class RegisteredCapsule
      # Every capsule registered on the Redis of +admin+ (a NativeAdmin),
      # sorted by identity.
      def self.all(admin)
        admin.capsules.map { |entry| from(entry) }.sort_by { |c| [c.label, c.name.to_s, c.uuid] }
      end

      # From a CapsuleEntry (shapes.rb).
      def self.from(entry)
        info = parse(entry.info)
        ttl = info["heartbeat_ttl"]
        left = entry.heartbeat_left
        new(
          uuid: entry.uuid,
          identity: info["identity"],
          name: info["name"],
          queues: Array(info["queues"]),
          concurrency: info["concurrency"],
          heartbeat_age: age(ttl, left),
          expired: left.nil?
        )
      end

      def self.age(ttl, left)
        (ttl - left).clamp(0, ttl).round(3) if ttl.is_a?(Numeric) && left
      end

      def self.parse(info)
        parsed = info && JSON.parse(info)
        parsed.is_a?(Hash) ? parsed : {}
      rescue JSON::ParserError
        {}
      end

      # What the capsule writes of itself at each heartbeat (Client#start).
      def self.describe(capsule, identity:, heartbeat_ttl:)
        JSON.generate(
          identity: identity,
          name: capsule.name,
          queues: capsule.queues.uniq,
          concurrency: capsule.concurrency,
          heartbeat_ttl: heartbeat_ttl
        )
      end

      def expired? = expired

      # Its identity, or its UUID when it did not say.
      def label = identity || uuid
    end
  end
end
