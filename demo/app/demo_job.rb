# frozen_string_literal: true

# A short job of any queue; the queues' limits are in config/sidekiq.yml.
class DemoJob
  include Sidekiq::Job
  include DemoRecording

  sidekiq_options retry: false

  def perform(queue, millis) = recorded(queue, millis)
end
