# frozen_string_literal: true

require "optparse"

module LimitFetchTools
  # The command-line options of bin/bench, bin/chaos and bin/demo, each
  # tool's flags a table of rows of one shape: [key, switch, type,
  # description lines...] (OptionParser#on's arguments after the key). A
  # flag given sets its key in `values`, and in `explicit` (which tells the
  # flags given from the defaults).
  module Options
    module_function

    # An OptionParser with the banner, the flags, the switches the block
    # adds, and -h/--help; `accept`: {class => its parse} for the flags' own
    # types.
    def parser(banner, flags, values, explicit = {}, accept: {})
      OptionParser.new do |opts|
        opts.banner = banner
        accept.each { |type, parse| opts.accept(type, &parse) }
        flags.each { |key, *flag| opts.on(*flag) { values[key] = explicit[key] = _1 } }
        yield opts if block_given?
        opts.on("-h", "--help", "show this help") { exit puts(opts) || 0 }
      end
    end

    # Raises naming the first of `keys` given a value under `least`.
    def at_least(values, keys, least = 1)
      keys.each { |key| invalid("#{switch(key)} must be at least #{least}") if values[key]&.<(least) }
    end

    # Raises naming the first of `keys` given a value not above 0.
    def positive(values, keys)
      keys.each { |key| invalid("#{switch(key)} must be positive") if values[key]&.<=(0) }
    end

    def switch(key) = "--#{key.to_s.tr("_", "-")}"

    def invalid(message) = raise(OptionParser::InvalidArgument, message)
  end
end
