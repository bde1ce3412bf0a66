# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # Every shape that crosses the seam between Ruby and the Rust binding,
    # in one place: Ruby owns them. The binding reads the first four by
    # member name and builds the others with keyword arguments
    # (ext/limit_fetch_native/src/helpers/data.rs), so that a member renamed
    # on one side only fails at once instead of shifting a value into the
    # wrong field. It looks each class up and pins it as it loads:
    # NativeExtension requires this file first.

    # ---- Read by the binding, checked by Ruby once, when built ----

    # Where and how the core reaches Redis (redis_settings.rb).
    RedisSettings = Data.define(:host, :port, :path, :db, :username, :password, :tls, :ca_certs, :timeout, :sentinel)

    # Redis Sentinel: the master's name and each sentinel, a RedisSettings
    # (sentinel_settings.rb).
    SentinelSettings = Data.define(:master_name, :sentinels)

    # How a capsule's core runs, besides where Redis is (capsule_options.rb).
    CapsuleOptions = Data.define(:heartbeat_period, :max_recoveries, :lookahead, :at_limit_warning_after)

    # A limit a capsule writes where Redis holds none (Native#set_default_limits),
    # checked by Limits.configured: +name+, a queue's, or for +kind+
    # :job_limit a job limit's id; +kind+ :limit, :process_limit or
    # :job_limit; +value+, an Integer.
    DefaultLimit = Data.define(:name, :kind, :value)

    # At most +limit+ job starts in any window of +period+ seconds (an
    # Integer when whole, else a Float): read by the binding as Ruby checked
    # it (Rates.coerce), and built by it from what Redis stores.
    Rate = Data.define(:limit, :period)

    # A queue's rate a capsule writes where Redis holds none
    # (Native#set_default_rates), checked by Rates.configured: +queue+, a
    # name; +rate+, a Rate.
    DefaultRate = Data.define(:queue, :rate)

    # A queue's adaptive limit a capsule writes where Redis holds none
    # (Native#set_default_ranges), checked by Limits.ranges: +queue+, a
    # name; its +floor+ (written as its limit too, a DefaultLimit) and
    # +ceiling+, Integers.
    DefaultRange = Data.define(:queue, :floor, :ceiling)

    # A job limit to back off (Native#back_off, NativeAdmin#back_off), checked
    # by Ruby (BackOffs): its +limit+ id, whether the job +carried+ it (false:
    # its class declares none and backs off as a class, named by +who+),
    # +who+ (the job's class, or "console"), the job's +jid+ ("" from the
    # console), and +seconds+ (a Float; nil: the default, which grows with
    # each back-off of the limit that follows the last).
    BackOffRequest = Data.define(:limit, :carried, :who, :jid, :seconds)

    # ---- Built by the binding ----

    # What a back-off did: the seconds until it ends (+ends_in+; a back-off
    # in force for longer is kept), and whether the job went back +parked+
    # (false: a reaper had pushed it back to its queue, or there was none).
    BackedOff = Data.define(:ends_in, :parked)

    # A back-off in force: the seconds it has +left+, who backed the limit off
    # (+by+: the job's class, or "console") and that job's +jid+.
    BackOffState = Data.define(:left, :by, :jid)

    # What a heartbeat did besides proving its capsule alive (Native#beat):
    # dead capsules it reaped (Reaped), busy lists of its own it corrected
    # (Correction), jobs in its in-progress lists that no thread ran because
    # the reply of their fetch was lost, pushed back (+orphans+, Job),
    # whether the capsule's heartbeat had expired (+restored+) and whether
    # Redis had lost its data then (+lost_data+: configured limits were
    # missing), jobs it still ran that Redis no longer counted, booked again
    # (+rebooked+: it had been reaped while alive), finished jobs whose
    # acknowledgement Redis had lost, removed (+finished+), whether reaping
    # was held off after an outage or a freeze (+held_off+), how many
    # parked jobs it sent back to their queues because their limit had room
    # that no finished job had passed on (+released+), and the data format
    # its census put in force if it changed it (+format_switched+, 1 or 2;
    # nil: none changed; see DataFormat).
    BeatReport = Data.define(:reaped, :corrected, :orphans, :restored, :lost_data, :rebooked, :finished,
      :held_off, :released, :format_switched)

    class BeatReport
      # A dead capsule: busy slots +freed+, in-progress jobs +requeued+ to
      # the front of their queues, and the jobs recovered once too often,
      # now in the dead set (+dead+, JobRefs). +unregistered+: it was found
      # holding slots while neither registered nor beating (reaped while
      # alive, it fetched again and died before registering), rather than
      # registered with its heartbeat expired.
      Reaped = Data.define(:uuid, :freed, :requeued, :dead, :unregistered)

      # A job by its queue, jid and class ("?" when its payload is not a
      # JSON object).
      JobRef = Data.define(:queue, :jid, :job_class)

      # A busy list (+key+) of this capsule's that held +before+ of its
      # entries, and now +after+.
      Correction = Data.define(:key, :before, :after)

      # A job of +queue+ by its jid ("?" when its payload is not a JSON
      # object).
      Job = Data.define(:queue, :jid)

      # A job of +queue+ this capsule still ran, booked again; +withdrawn+:
      # it was still queued (or parked), taken out again, and runs once.
      Rebooked = Data.define(:queue, :jid, :withdrawn)
    end

    # A limit as Redis holds it (NativeAdmin#stored_limits): +kind+ :limit or
    # :process_limit, its +key+, and +raw+, the stored text (nil when unset),
    # which may not be a number if it was set by hand.
    StoredLimit = Data.define(:queue, :kind, :key, :raw)

    # One queue as Redis holds it, read in one round trip
    # (NativeAdmin#queue_states): its limits as the fetch reads them (nil:
    # none; a broken value reads as 0; an adaptive limit's limit in force,
    # with +adaptive+: {value:, floor:, ceiling:}, else nil), +busy+ slots by capsule UUID
    # ({uuid => count}), +queued+ jobs in Sidekiq's list, whether it is
    # +paused+, the seconds its pause has left (+pause_left+; nil when
    # paused until unpaused, or not paused), its +rate+ (a Rate as the
    # fetch reads it, a broken one as 0 starts; nil: none), and its +fair+
    # limit (a fair queue's, `fair_limits:`, whose slots its tenants share;
    # nil for a queue that is not fair).
    QueueState = Data.define(:name, :limit, :process_limit, :busy, :queued, :paused, :pause_left, :rate, :adaptive,
      :fair)

    # A registered capsule as Redis holds it (NativeAdmin#capsules): its
    # +uuid+, what it says of itself (+info+, the JSON Client#describe
    # wrote; nil for a capsule of sidekiq-limit_fetch v5) and the seconds
    # its heartbeat key has left (+heartbeat_left+; nil once it expired).
    # RegisteredCapsule reads it.
    CapsuleEntry = Data.define(:uuid, :info, :heartbeat_left)

    # A job limit as Redis holds it (NativeAdmin#job_limits): its +id+
    # (JobLimitId), the limit +stored+ at run time (nil: each job's default
    # applies), the jobs carrying it that run now across every process
    # (+running+), those set aside until it has room (+parked+), and the rate
    # stored at run time (+stored_rate+, a Rate; nil: each job's own applies),
    # the back-off in force (+back_off+, a BackOffState; nil: none), and an
    # adaptive limit's limit in force as stored (+adaptive+; nil: none yet).
    JobLimitState = Data.define(:id, :stored, :running, :parked, :stored_rate, :back_off, :adaptive)

    # A tenant of a class declared fair: with work (NativeAdmin#fair_tenants):
    # its key limit's +id+, its jobs +running+ and +parked+, and the +weight+
    # its jobs carry (a Float).
    FairTenant = Data.define(:id, :running, :parked, :weight)

    # A class declared fair: whose tenants have work
    # (NativeAdmin#fair_classes): its class limit's +id+ and its +tenants+
    # (FairTenants, by id).
    FairClass = Data.define(:id, :tenants)

    # What NativeAdmin#release_all did, or why it did nothing: the +live+
    # capsules it found (CapsuleEntry: registered, their heartbeat present),
    # whether it +refused+ (capsules live and not forced: nothing done), the
    # jobs each queue got back at its front (+queues+: [name, parked,
    # recovered from capsules that were not alive]), the jobs sent to the
    # dead set instead (+dead+: [queue, jid, class]), how many +capsules+
    # that were not alive it reaped, and the seconds the outage key has
    # left (+outage_left+; nil: none stood, else no capsule was reaped).
    # ReleaseAll reads it.
    ReleaseReport = Data.define(:live, :refused, :queues, :dead, :capsules, :outage_left)

    # A rate's window now (NativeAdmin#rate_windows): +starts+ within the
    # last period, and the seconds until the next may start (nil: now).
    RateWindow = Data.define(:starts, :next_start_in)
  end
end

# The checks of the shapes Ruby builds for the binding to read: each checks
# its members once, when it is built, and the binding only converts them.
require "sidekiq/limit_fetch/check"
require "sidekiq/limit_fetch/redis_settings"
require "sidekiq/limit_fetch/sentinel_settings"
require "sidekiq/limit_fetch/capsule_options"
