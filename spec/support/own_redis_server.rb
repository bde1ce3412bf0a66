# frozen_string_literal: true

require "redis-client"
require_relative "../../tools/lib/limit_fetch_tools"

# A redis-server of one example's own, for the specs that need a server set
# up differently from the suite's (a Unix socket, a password, ACL users, AOF,
# TLS) or one they can stop and start again: the tools' RedisServer, under
# the name the specs know it by.
OwnRedisServer = LimitFetchTools::RedisServer
