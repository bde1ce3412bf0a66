# frozen_string_literal: true

module LimitFetchBench
  # What a measuring process of a section needs beside the usual (Runner):
  # the rate section's (RateVariants.spec), the back_off section's
  # (BackOffVariants.spec), the fair section's (FairVariants.spec), the
  # memory section's (MemoryVariants.spec); nothing
  # for the others.
  module SectionSpec
    module_function

    def of(step, options, jobs)
      case step.section
      when "rate" then RateVariants.spec(options, Variant[step.variant], jobs)
      when "back_off" then BackOffVariants.spec(options, jobs)
      when "fair" then FairVariants.spec(options)
      when "memory" then MemoryVariants.spec(options)
      else {}
      end
    end
  end
end
