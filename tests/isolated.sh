#!/bin/sh
# tests/isolated.sh NAME COMMAND [ARG...]: runs one test in a folder of its own, so that ctest can
# run tests side by side: TMPDIR (and with it the runner's per-user state folder,
# ${TMPDIR:-/tmp}/suite-<uid>, where SUITE_STATE_DIR is not set), HOME, matplotlib's cache
# (MPLCONFIGDIR) and XDG's folders all lie in a fresh folder under the caller's TMPDIR (short: MPS
# names sockets after it), removed when the test ends.
name=$1
shift
dir=$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX") || exit 1
mkdir -p "$dir/tmp" "$dir/home" || exit 1
export TMPDIR="$dir/tmp" HOME="$dir/home" MPLCONFIGDIR="$dir/home/.matplotlib" \
       XDG_CACHE_HOME="$dir/home/.cache" XDG_CONFIG_HOME="$dir/home/.config"
unset SUITE_STATE_DIR
"$@"
status=$?
rm -rf "$dir"
exit $status
