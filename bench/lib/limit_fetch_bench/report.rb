# frozen_string_literal: true

module LimitFetchBench
  # Writes latest.json and latest.md, each through a temporary file, so
  # that a failed bench leaves the previous ones whole.
  class Report
    def initialize(summary, dir)
      @summary = summary
      @dir = dir
    end

    # The paths written.
    def write
      FileUtils.mkdir_p(@dir)
      [atomic("latest.json") { File.write(_1, "#{JSON.pretty_generate(@summary)}\n") },
       atomic("latest.md") { File.write(_1, Markdown.new(@summary).render) }]
    end

    private

    def atomic(name)
      path = File.join(@dir, name)
      yield "#{path}.tmp"
      File.rename("#{path}.tmp", path)
      path
    end
  end
end
