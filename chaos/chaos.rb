# frozen_string_literal: true

# The driver of bin/chaos, which first compiles the extension and then runs this.
ENV["BUNDLE_GEMFILE"] = File.expand_path("../Gemfile", __dir__)
require "bundler/setup"
require_relative "lib/limit_fetch_chaos"
require_relative "../tools/lib/limit_fetch_tools/boot"

# One run: its report, printed (and, for the default plan, written to
# chaos/results).
def chaos_run(options)
  if options.fault
    report = LimitFetchChaos::FaultRunner.new(options, plan: LimitFetchChaos::FaultPlan.new(options)).run
    return report.tap { puts "", LimitFetchChaos::Markdown.render(report.to_h) }
  end

  report = LimitFetchChaos::Runner.new(options).run
  markdown = LimitFetchChaos::Markdown.render(report.to_h)
  puts "", markdown
  write_results(options.results, report, markdown) if options.results
  report
end

def write_results(dir, report, markdown)
  FileUtils.mkdir_p(dir)
  File.write(File.join(dir, "latest.json"), "#{JSON.pretty_generate(report.to_h)}\n")
  File.write(File.join(dir, "latest.md"), markdown)
  puts "Wrote #{File.join(dir, "latest.{json,md}")}"
end

LimitFetchTools::Boot.run("bin/chaos", LimitFetchChaos::Options) do |options|
  %w[INT TERM].each { |signal| trap(signal) { raise Interrupt } }
  begin
    repeat = LimitFetchChaos::Repeat.new(options)
    outcomes = repeat.run { chaos_run(_1) }
  rescue Interrupt
    warn "\nbin/chaos: interrupted; stopped the Sidekiq processes and Redis, removed the app directory."
    exit 130
  end

  puts repeat.summary(outcomes) if options.repeat > 1
  failed = outcomes.reject(&:passed)
  warn "\nbin/chaos: FAILED: #{failed.flat_map(&:failures).uniq.join("; ")}" if failed.any? && options.repeat == 1
  failed.empty? ? 0 : 1
end
