# frozen_string_literal: true

module LimitFetchBench
  # Tells Recorder.current when a fetcher hands out a job and when the job is
  # acknowledged or pushed back, for BasicFetch and LimitFetch alike. Each
  # class gets a module of its own: LimitFetch overrides without super.
  module FetchHooks
    module_function

    def install
      [Sidekiq::BasicFetch, Sidekiq::LimitFetch].each { hook_fetch(_1) }
      [Sidekiq::BasicFetch::UnitOfWork, Sidekiq::LimitFetch::UnitOfWork].each { hook_release(_1) }
    end

    def hook_fetch(klass)
      klass.prepend(Module.new do
        def retrieve_work
          work = super
          Recorder.current&.fetched(work.queue_name) if work
          work
        end
      end)
    end

    def hook_release(klass)
      klass.prepend(Module.new do
        def acknowledge
          Recorder.current&.released(queue_name)
          super
        end

        def requeue
          Recorder.current&.released(queue_name)
          super
        end
      end)
    end
  end
end
