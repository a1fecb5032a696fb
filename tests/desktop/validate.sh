#!/bin/sh
# Validates the desktop entry and the AppStream metadata as Debian's lintian and software
# centres will read them. Exits 77 (skipped) when the validators are not installed
# (Debian: desktop-file-utils, appstream), so a bare build machine does not fail.
# Usage: validate.sh DESKTOP_FILE METAINFO_FILE
set -eu
desktop_file=$1
metainfo_file=$2

if ! command -v desktop-file-validate >/dev/null 2>&1 || ! command -v appstreamcli >/dev/null 2>&1; then
  echo "validate.sh: desktop-file-validate or appstreamcli not found (apt-get install desktop-file-utils appstream): skipped"
  exit 77
fi
# Hints (such as two main categories) are printed but do not fail; errors do.
desktop-file-validate "$desktop_file"
# --no-net: tests must not depend on the network (and the build machine may have none).
appstreamcli validate --no-net "$metainfo_file"
