#!/usr/bin/env bash
# A stand-in container runtime for the tests: records how it was called (one line per call, in
# <its directory>/<its name>.calls), then runs the command that follows the image "busybox";
# `exec CONTAINER CMD...` runs CMD.
echo "$@" >>"$0.calls"
if [ "$1" = exec ]; then
  shift 2
  exec "$@"
fi
while [ $# -gt 0 ] && [ "$1" != "busybox" ]; do shift; done
shift
exec "$@"
