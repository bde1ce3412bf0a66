# frozen_string_literal: true

module LimitFetchBench
  # Writes latest.json, latest.md and (with gnuplot) latest.png, each through
  # a temporary file, so that a failed bench leaves the previous ones whole.
  class Report
    def initialize(summary, dir)
      @summary = summary
      @dir = dir
    end

    # The paths written.
    def write
      FileUtils.mkdir_p(@dir)
      [atomic("latest.json") { File.write(_1, "#{JSON.pretty_generate(@summary)}\n") },
       atomic("latest.md") { File.write(_1, Markdown.new(@summary).render) }, chart].compact
    end

    private

    def chart
      return warn("bin/bench: gnuplot not found, no chart (apt-get install gnuplot-nox)") unless Chart.available?

      atomic("latest.png") { Chart.new(@summary).write(_1) }
    rescue Failure => e
      warn "bin/bench: no chart written: #{e.message}"
    end

    def atomic(name)
      path = File.join(@dir, name)
      yield "#{path}.tmp"
      File.rename("#{path}.tmp", path)
      path
    end
  end
end
