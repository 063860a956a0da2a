# shellcheck shell=bash
# Sourced by scripts/test.sh and scripts/flake-hunt.sh, which run mounts
# over the transport CI's run uses, and by scripts/demo.sh (whose mounts
# take it too; CLAIRFS_TEST_IO_URING=off runs the demo over /dev/fuse).
#
# FUSE over io_uring (--io-uring auto, the default) is used only while the
# kernel's switch is on, which it is not by default and clairfs never turns
# on. A test run turns it on where the kernel has it (CLAIRFS_TEST_IO_URING
# =off turns it off instead, to run over /dev/fuse), and puts it back
# afterwards: the caller's EXIT trap runs "$io_uring_restore".
#
# io_uring_switch NAME BUILD_DIR: sets `transport` to a phrase saying which
# transport the mounts use and why, and `io_uring_restore` to the command
# that puts the switch back ('' if nothing changed). Exits 2 on a bad
# CLAIRFS_TEST_IO_URING.
io_uring_switch() {
  local name=$1 build=$2
  local switch=/sys/module/fuse/parameters/enable_uring
  local want=${CLAIRFS_TEST_IO_URING:-on} value was now restored=''
  io_uring_restore=''
  case "$want" in
  on) value=Y ;;
  off) value=N ;;
  *)
    echo "$name: CLAIRFS_TEST_IO_URING must be on or off, not '$want'" >&2
    exit 2
    ;;
  esac
  if ! grep -q 'CLAIRFS_HAVE_IO_URING 1' "$build/clairfs_config.h"; then
    transport="/dev/fuse (this build's libfuse has no io_uring: see scripts/install-deps.sh)"
    return
  fi
  if [ ! -e "$switch" ]; then
    transport="/dev/fuse (this kernel has no FUSE over io_uring: no $switch)"
    return
  fi
  was=$(cat "$switch")
  if [ "$was" != "$value" ]; then
    if echo "$value" 2>/dev/null >"$switch"; then
      io_uring_restore="echo $was >$switch"
      restored=", $was restored afterwards"
    else
      echo "$name: cannot set $switch to $value (not root?); it stays $was" >&2
    fi
  fi
  now=$(cat "$switch")
  if [ "$now" = Y ]; then
    transport="io_uring ($switch is Y for this run$restored)"
  else
    transport="/dev/fuse ($switch is $now for this run$restored)"
  fi
}
