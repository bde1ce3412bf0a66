# frozen_string_literal: true

require "mkmf"
require "rb_sys/mkmf"

create_rust_makefile("sidekiq/limit_fetch/limit_fetch_native")
