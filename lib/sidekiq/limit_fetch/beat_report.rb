# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # What a heartbeat did besides proving its capsule alive (Native#beat):
    # dead capsules it reaped (Reaped), busy lists of its own it corrected
    # (Correction), jobs in its in-progress lists that no thread ran because
    # the reply of their fetch was lost, pushed back (+orphans+, Job),
    # whether the capsule's heartbeat had expired (+restored+) and whether
    # Redis had lost its data then (+lost_data+: configured limits were
    # missing), jobs it still ran that Redis no longer counted, booked again
    # (+rebooked+: it had been reaped while alive), finished jobs whose
    # acknowledgement Redis had lost, removed (+finished+), whether reaping
    # was held off after an outage or a freeze (+held_off+), and how many
    # parked jobs it sent back to their queues because their limit had room
    # that no finished job had passed on (+released+).
    BeatReport = Data.define(:reaped, :corrected, :orphans, :restored, :lost_data, :rebooked, :finished,
      :held_off, :released)

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
  end
end
