# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # The errors that mean "back off" for a job class: its `limit_fetch:
    # {back_off_on: [...]}` and the configuration's `back_off_on`, each an
    # exception class or the name of one.
    module BackOffOn
      module_function

      # The exception classes for the job class named +class_name+.
      def of(class_name)
        declared = declared(class_name)
        listed("back_off_on of #{class_name}", declared) +
          listed("Sidekiq::LimitFetch.configuration[:back_off_on]", LimitFetch.configuration[:back_off_on])
      end

      # The classes of +list+ (nil: none), checked: +what+ names it in the
      # error.
      def listed(what, list)
        return [] if list.nil?
        raise ArgumentError, "sidekiq-limit_fetch: #{what} must be a list of exception classes" unless list.is_a?(Array)

        list.map { |entry| exception_class(what, entry) }
      end

      def exception_class(what, entry)
        klass = entry.is_a?(String) ? Object.const_get(entry) : entry
        return klass if klass.is_a?(Class) && klass <= Exception

        raise ArgumentError, "sidekiq-limit_fetch: #{what} lists #{entry.inspect}, not an exception class"
      rescue NameError
        raise ArgumentError, "sidekiq-limit_fetch: #{what} lists #{entry.inspect}, which names no class"
      end

      def declared(class_name)
        klass = Object.const_get(class_name)
        options = klass.respond_to?(:get_sidekiq_options) && klass.get_sidekiq_options["limit_fetch"]
        options.is_a?(Hash) ? (options[:back_off_on] || options["back_off_on"]) : nil
      rescue NameError
        nil
      end
    end
  end
end
