#!/usr/bin/env bash
# A stand-in container runtime for the tests: records how it was called (one line per call, in
# <its directory>/<its name>.calls), then runs the command that follows the image "busybox".
echo "$@" >>"$0.calls"
while [ $# -gt 0 ] && [ "$1" != "busybox" ]; do shift; done
shift
exec "$@"
