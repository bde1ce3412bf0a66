# frozen_string_literal: true

require "json"
require "net/http"
require "rbconfig"
require_relative "../limit_fetch_tools"
require_relative "downstream/counts"
require_relative "served"

module LimitFetchTools
  # A simulated downstream (a partner's HTTP API) of a driver's or a spec's
  # own, run as a process of its own (Downstream::Server) on 127.0.0.1 and a
  # free port, so that killing the Sidekiq processes that call it leaves it
  # up. Each tenant (`GET /call?tenant=T&ms=50`) may have `capacity` calls in
  # flight; one more is answered 429 at once with a Retry-After header:
  # `retry_after` seconds, as delta-seconds ("0.2": fractions are kept) or,
  # in mode "date", as an HTTP-date. The methods below set it at run time
  # and read what it saw (#stats). Loads no gem.
  class Downstream
    PROGRAM = File.join(__dir__, "downstream", "server.rb")
    BOOT_TIMEOUT = 10
    STOP_TIMEOUT = 5

    attr_reader :port, :pid

    # A handle on a downstream that another process started, at `url`: every
    # method but #start and #stop.
    def self.attach(url) = new(port: URI(url).port)

    SETTINGS = {capacity: 4, retry_after: 0.2, mode: "seconds", sample_interval: 0.05}.freeze

    # `settings`: capacity, retry_after, mode ("seconds" or "date") and
    # sample_interval (seconds between two samples of the calls in flight),
    # SETTINGS by default. `dir`: for its log; by default a temporary
    # directory of its own, which #remove deletes.
    def initialize(dir: nil, port: nil, **settings)
      @own_dir = dir.nil?
      @dir = dir
      @port = port || LimitFetchTools.free_port
      @args = ["--port", @port.to_s,
               *SETTINGS.merge(settings).flat_map { |name, value| ["--#{name.to_s.tr("_", "-")}", value.to_s] }]
    end

    def dir = @dir ||= Dir.mktmpdir("limit-fetch-downstream-")

    def url = "http://127.0.0.1:#{port}"

    def log_path = File.join(dir, "downstream.log")

    include Served

    def command = [RbConfig.ruby, PROGRAM, *@args]

    def name = "the downstream"

    def address = port

    def remove
      stop
      FileUtils.rm_rf(@dir) if @own_dir && @dir
    end

    # Each tenant's capacity from now on (recorded as a change in #stats).
    def capacity=(capacity)
      post("/capacity", n: capacity)
    end

    # Forgets every count and sample, with new settings where given
    # (capacity:, retry_after:, mode:).
    def reset(**settings) = post("/reset", **settings)

    # What it saw since the last reset (Downstream::Counts).
    def stats = Counts.new(JSON.parse(get("/stats")))

    private

    def ready?
      status = ChildProcess.ended(@pid)
      raise Failure, "the downstream exited (#{status})" if status

      get("/health")
    rescue SystemCallError
      false
    end

    def get(path) = request(Net::HTTP::Get.new(path))

    def post(path, **query) = request(Net::HTTP::Post.new("#{path}?#{URI.encode_www_form(query)}"))

    # The body of a 200; Failure with the downstream's error otherwise.
    def request(request)
      response = Net::HTTP.start("127.0.0.1", port, open_timeout: 2, read_timeout: 10) { _1.request(request) }
      return response.body if response.code == "200"

      raise Failure, "the downstream answered #{request.method} #{request.path}: #{response.code} #{response.body}"
    end
  end
end
