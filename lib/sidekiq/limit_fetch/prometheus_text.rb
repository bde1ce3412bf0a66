# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # Prometheus's text exposition format, version 0.0.4: metric families
    # with HELP and TYPE lines, names prefixed "sidekiq_limit_fetch_", label
    # values escaped (backslash, double quote, newline).
    class PrometheusText
      PREFIX = "sidekiq_limit_fetch_"

      def initialize
        @lines = []
      end

      # +samples+: [[{label => value}, number], ...]; true/false read as 1/0.
      def metric(name, type, help, samples)
        name = "#{PREFIX}#{name}"
        @lines << "# HELP #{name} #{help.gsub(/[\\\n]/, "\\" => "\\\\", "\n" => "\\n")}"
        @lines << "# TYPE #{name} #{type}"
        samples.each { |labels, value| @lines << "#{name}{#{label_text(labels)}} #{number(value)}" }
        self
      end

      def to_s
        @lines.map { |line| "#{line}\n" }.join
      end

      private

      def label_text(labels)
        labels.map { |key, value| "#{key}=\"#{escape(value.to_s)}\"" }.join(",")
      end

      def escape(value)
        value.gsub(/[\\"\n]/, "\\" => "\\\\", "\"" => "\\\"", "\n" => "\\n")
      end

      def number(value)
        case value
        when true then "1"
        when false then "0"
        when Float then value.finite? ? value.to_s : value.to_s.sub("Infinity", "Inf")
        else value.to_s
        end
      end
    end
  end
end
