# frozen_string_literal: true

# LIMIT_FETCH_GC_STRESS=1 (bin/test runs `rspec --tag binding` so): every
# call into the extension runs with GC.stress on, so that each allocation in
# it, and in the Ruby threads that run while it waits without the GVL, runs
# the GC (compacting too, with GC.auto_compact): an object the binding holds
# unmarked or unpinned is collected or moved at once, not some day. Only the
# calls: the whole examples under GC.stress take many minutes.
module GCStress
  module_function

  def install
    stress(Sidekiq::LimitFetch::Native)
    stress(Sidekiq::LimitFetch::Native.singleton_class)
  end

  def stress(klass)
    names = klass.public_instance_methods(false)
    klass.prepend(Module.new do
      names.each do |name|
        define_method(name) do |*args, **kwargs, &block|
          GCStress.during { super(*args, **kwargs, &block) }
        end
      end
    end)
  end

  # Nested and concurrent calls: stress stays on until the last one returns.
  @lock = Mutex.new
  @depth = 0

  def during
    @lock.synchronize { GC.stress = true if (@depth += 1) == 1 }
    yield
  ensure
    @lock.synchronize { GC.stress = false if (@depth -= 1).zero? }
  end
end
