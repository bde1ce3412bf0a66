# frozen_string_literal: true

module LimitFetchDemo
  # Sidekiq's Web UI, with the gem's Limits tab, on 127.0.0.1 and a free
  # port while the demo runs (LimitFetchTools::WebServer: puma in this
  # process). Loaded once the app's bundle, which has puma, is set up.
  module WebUi
    GEMS = %w[puma rack-session].freeze

    def self.start
      require_relative "../../../tools/lib/limit_fetch_tools/web_server"
      LimitFetchTools::WebServer.new.start
    end
  end
end
