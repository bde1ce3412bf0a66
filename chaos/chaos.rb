# frozen_string_literal: true

# The driver of bin/chaos, which first compiles the extension and then runs this.
ENV["BUNDLE_GEMFILE"] = File.expand_path("../Gemfile", __dir__)
require "bundler/setup"
require_relative "lib/limit_fetch_chaos"

$stdout.sync = true

begin
  options = LimitFetchChaos::Options.parse(ARGV)
rescue OptionParser::ParseError => e
  warn "bin/chaos: #{e.message} (see bin/chaos --help)"
  exit 2
end

%w[INT TERM].each { |signal| trap(signal) { raise Interrupt } }
begin
  report = LimitFetchChaos::Runner.new(options).run
rescue LimitFetchChaos::Failure => e
  warn "\nbin/chaos: FAILED: #{e.message}"
  exit 1
rescue Interrupt
  warn "\nbin/chaos: interrupted; stopped the Sidekiq processes and Redis, removed the app directory."
  exit 130
end

markdown = LimitFetchChaos::Markdown.render(report.to_h)
puts "", markdown
if options.results
  FileUtils.mkdir_p(options.results)
  File.write(File.join(options.results, "latest.json"), "#{JSON.pretty_generate(report.to_h)}\n")
  File.write(File.join(options.results, "latest.md"), markdown)
  puts "Wrote #{File.join(options.results, "latest.{json,md}")}"
end
exit(report.passed? ? 0 : 1)
