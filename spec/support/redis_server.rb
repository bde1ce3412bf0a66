# frozen_string_literal: true

require "redis-client"
require "uri"
require_relative "../../tools/lib/limit_fetch_tools"

# The Redis the suite runs against: ENV["REDIS_URL"] when set (bin/test
# starts one), else a redis-server of the suite's own (LimitFetchTools) that
# lives as long as the suite. Its URL is put in ENV["REDIS_URL"] so the
# Sidekiq processes the end-to-end specs start find it too.
module RedisServer
  class << self
    attr_reader :url

    def start
      return @url if @url

      if ENV["REDIS_URL"] && !ENV["REDIS_URL"].empty?
        @url = ENV["REDIS_URL"]
      else
        server = LimitFetchTools::RedisServer.new.start
        at_exit { server.remove }
        @url = ENV["REDIS_URL"] = server.url
      end
      with_client { |conn| conn.call("PING") } # fails here, not in the first example, if it does not answer
      @url
    end

    # A fresh client; callers close it (or use #with_client).
    def client(db: nil)
      config = RedisClient.config(url: url, **(db ? {db: db} : {}))
      config.new_client
    end

    def with_client(db: nil)
      conn = client(db: db)
      yield conn
    ensure
      conn&.close
    end

    # A URL to the same server with another logical database.
    def url_for_db(db)
      uri = URI.parse(url)
      uri.path = "/#{db}"
      uri.to_s
    end
  end
end
