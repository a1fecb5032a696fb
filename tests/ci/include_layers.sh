#!/usr/bin/env bash
# Arrows point down (issue 26, STYLE.md): each folder includes only from the folders below it:
#   gui/ (the workbench's entry point) > ui/ (widgets) > app/ (run controller, store, CLI) >
#   engine/ (Qt-free). Lists every #include that points up, and fails when there is one.
# usage: include_layers.sh SOURCE_DIR
set -u
src=${1:?usage: include_layers.sh SOURCE_DIR}
cd "$src" || exit 2
bad=0
check() {  # $1: folder; $2: extended regex of the includes it must not have; $3: why
  local hits
  hits=$(grep -rnE --include='*.h' --include='*.cpp' --include='*.cu' --include='*.cuh' \
    "^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"]($2)" "$1" 2>/dev/null)
  if [ -n "$hits" ]; then
    echo "$1 includes from above it ($3):"
    echo "$hits" | sed 's/^/  /'
    bad=1
  fi
}
check engine 'app/|ui/|gui/|Q[A-Za-z]+(>|\.h)|QtCore|QtWidgets' "the engine knows no app, ui or Qt"
check app 'ui/|gui/' "app/ is below ui/ and gui/"
check ui 'gui/' "ui/ is below gui/"
[ "$bad" -eq 0 ] && echo "every #include under engine/, app/ and ui/ points down"
exit "$bad"
