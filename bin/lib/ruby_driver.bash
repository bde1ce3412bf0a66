# Sourced by bin/demo, bin/bench and bin/chaos, each of which drives a Ruby
# program once the native extension is built:
#
#   run_ruby_driver PATH/TO/DRIVER.rb "$@"
#
# Without Ruby >= 3.2 or redis-server on this machine it runs the calling
# script again inside bin/sandbox. Then, from the repository, it installs the
# bundle and compiles the extension, showing a step's output only when it
# fails, and replaces itself with `ruby DRIVER.rb ARGS` (straight away for
# --help).

run_ruby_driver() {
  local driver=$1
  shift
  if [ "${LIMIT_FETCH_SANDBOX:-}" != 1 ] &&
    { ! ruby -e 'exit(RUBY_VERSION >= "3.2" ? 0 : 1)' 2>/dev/null || ! command -v redis-server >/dev/null; }; then
    exec "$(dirname "$0")/sandbox" "$0" "$@"
  fi
  cd "$(dirname "${BASH_SOURCE[0]}")/../.."
  case " $* " in *" -h "* | *" --help "*) exec ruby "$driver" --help ;; esac

  driver_step "bundle install" bash -c 'bundle install --local --quiet || bundle install --quiet'
  driver_step "bundle exec rake compile (the native extension)" bundle exec rake compile
  exec ruby "$driver" "$@"
}

# Runs a build step quietly; shows its output only when it fails.
driver_step() {
  local title=$1 log
  shift
  echo "==> $title" >&2
  log=$(mktemp)
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "$(basename "$0"): '$title' failed" >&2
    exit 1
  fi
  rm -f "$log"
}
