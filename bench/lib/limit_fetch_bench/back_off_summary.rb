# frozen_string_literal: true

module LimitFetchBench
  # The back_off section over its runs (BackOffRun): one row per run, in the
  # order they ran, with its variant's label, the wall time's ratio to the
  # ideal, and whether every job was done exactly once, with no retry, no
  # job in the retry or dead set and no failure (`clean`); a skipped run
  # (the adaptive variant without BackOff) keeps only why.
  class BackOffSummary
    def initialize(runs)
      @runs = runs.select { _1["section"] == "back_off" }
    end

    # {"back_off" => rows}; nothing where the section did not run, so that
    # the summary of the other sections reads as it did before it.
    def to_h = @runs.empty? ? {} : {"back_off" => @runs.map { row(_1) }}

    private

    def row(run)
      row = run.slice("variant", "round").merge("label" => Variant[run["variant"]].label)
      return row.merge("skipped" => run["skipped"]) if run["skipped"]

      row.merge(run.except("section", "build"), "vs_ideal" => run["seconds"]&.fdiv(run["ideal_seconds"]),
        "clean" => clean?(run))
    end

    def clean?(run)
      run["done_once"] && %w[retried_jobs retry_set_max dead_set failed].all? { run[_1].zero? }
    end
  end
end
