# frozen_string_literal: true

module LimitFetchChaos
  # The commands a Redis (or Valkey) with `appendonly yes` wrote to its
  # append-only file, in order: the incremental files its manifest names
  # (the base, written only by a rewrite, holds nothing before one), each a
  # sequence of RESP arrays of bulk strings. A command cut short at the end
  # (being written as it is read) is left out.
  class AppendOnlyFile
    def initialize(dir)
      @dir = File.join(dir, "appendonlydir")
    end

    def each_command(&)
      incremental.each { |path| File.open(path, "rb") { read(_1, &) } }
    end

    private

    def incremental
      manifest = Dir[File.join(@dir, "*.manifest")].first or raise Failure, "no append-only file in #{@dir}"
      File.readlines(manifest).filter_map do |line|
        fields = line.split.each_slice(2).to_h
        File.join(@dir, fields.fetch("file")) if fields["type"] == "i"
      end
    end

    def read(io)
      while (line = io.gets("\r\n"))
        next unless line.start_with?("*")

        args = Array.new(Integer(line[1..])) { bulk(io) or return }
        yield(*args)
      end
    end

    def bulk(io)
      length = io.gets("\r\n")&.then { Integer(_1[1..]) } or return
      data = io.read(length + 2)
      data.byteslice(0, length) if data&.bytesize == length + 2
    end
  end
end
