#!/usr/bin/env bash
# Runs one part of the Keras parity checks (parity.py) in the venv of scripts/keras-env.sh.
#   tests/keras/run.sh setup                  make the venv (the ctest fixture keras.env)
#   tests/keras/run.sh MIXLAB_CLI PART [ARG]...   parity.py --cli MIXLAB_CLI PART [ARG]...
# Exits 77 (skipped) when the venv cannot be made (no python3-venv, PyPI unreachable); with
# MIXLAB_REQUIRE_KERAS=1 that is a failure instead.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

if ! python=$(bash "$root/scripts/keras-env.sh"); then
    if [[ ${MIXLAB_REQUIRE_KERAS:-0} == 1 ]]; then
        echo "run.sh: the Keras venv cannot be made (above) and MIXLAB_REQUIRE_KERAS=1: failing" >&2
        exit 1
    fi
    echo "run.sh: the Keras venv cannot be made (above): skipped (MIXLAB_REQUIRE_KERAS=1 fails instead)" >&2
    exit 77
fi
if [[ $1 == setup ]]; then
    echo "Keras venv ready: $python"
    exit 0
fi
cli=$1
shift
exec "$python" "$here/parity.py" --cli "$cli" "$@"
