# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    module Web
      # The Resume button of a job limit backing off: ends its back-off at
      # once (JobLimit#resume). The form names the limit by its id, encoded
      # as a queue is (QueueField: a key is any text); ::from_form checks
      # it and raises ArgumentError, with a message for the page, before
      # anything is changed.
      class Resume
        FIELD = "limit"

        # The resume the form's fields (a Hash) ask for.
        def self.from_form(fields)
          value = fields[FIELD]
          raise ArgumentError, "no job limit named in the form" if value.nil? || value == ""
          raise ArgumentError, "the job limit must be one value, got #{value.inspect}" unless value.is_a?(String)

          id = begin
            QueueField.decode(value)
          rescue ArgumentError
            raise ArgumentError, "the job limit in the form is not one this page sent: #{value.inspect}"
          end
          new(id)
        end

        attr_reader :id

        def initialize(id)
          @id = id
        end

        def apply
          JobLimit.new(id).resume
        end
      end
    end
  end
end
