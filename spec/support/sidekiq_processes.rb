# frozen_string_literal: true

# What the end-to-end specs do with the `sidekiq` processes they start
# (SidekiqProcess): wait until one runs and has registered its capsule, and
# stop one as a deploy does.
module SidekiqProcesses
  # Waits until each of +processes+ runs and they have registered one
  # capsule each beyond +before+ (the capsules registered before they
  # started); returns the new capsules' uuids.
  def await_registration(processes, before)
    names = processes.map(&:name).join(", ")
    logs = -> { processes.map { |process| "#{process.name}:\n#{process.log_tail}" }.join("\n") }
    wait_until(timeout: 30, message: -> { "#{names} to start and register; logs:\n#{logs.call}" }) do
      processes.each do |process|
        raise "#{process.name} exited (#{process.status.inspect}) while starting; log:\n#{process.log_tail}" unless
          process.alive?
      end
      identities = redis.call("SMEMBERS", "processes")
      running = processes.all? { |process| identities.any? { |identity| identity.include?(":#{process.pid}:") } }
      fresh = registered_capsules - before
      fresh if running && fresh.size == processes.size
    end
  end

  def stop_process(process, timeout: 30)
    process.signal("TERM")
    status = process.wait(timeout)
    expect(status).not_to be_nil, "#{process.name} did not exit within #{timeout}s of TERM; log:\n#{process.log_tail}"
    expect(status).to be_success, "#{process.name} exited with #{status.inspect}; log:\n#{process.log_tail}"
  end
end
