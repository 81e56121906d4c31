#!/bin/sh
# lintian on the packages build-deb.sh made: no errors (warnings are
# printed, and the overrides in debian/*.lintian-overrides say why).
#   lintian.sh <output dir of build-deb.sh>
set -eu
out=$1
# --fail-on error: exit status 1 only for errors (and lintian's own failures).
lintian --fail-on error --tag-display-limit 0 "$out"/*.changes
echo "lintian: no errors"
