#!/usr/bin/env bash
# A stand-in container runtime for the tests: records how it was called (one line per call, in
# <its directory>/<its name>.calls). `run [flags] IMAGE [CMD...]` runs CMD when IMAGE is
# "busybox"; any other image cannot be pulled here, so it stands in for it by sleeping (a
# trainer that keeps running). `exec CONTAINER CMD...` runs CMD.
echo "$@" >>"$0.calls"
if [ "$1" = exec ]; then
  shift 2
  exec "$@"
fi
shift  # run
while [ $# -gt 0 ]; do
  case $1 in
    --name | -v | -w | --device | --user | -e) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
image=$1
shift
[ "$image" = busybox ] || exec sleep 311
exec "$@"
