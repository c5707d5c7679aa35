#!/usr/bin/env bash
# Reproduces app/vendor: installs the exact versions of package-lock.json with npm ci in a temporary
# folder and copies the browser builds (and their licenses) into the folder given (app/vendor by
# default). ui_test.go runs it into a temporary folder and compares, so the committed files are the
# ones npm publishes.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:-$here/app/vendor}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cp "$here/package.json" "$here/package-lock.json" "$work/"
(cd "$work" && npm ci --no-audit --no-fund --silent --ignore-scripts)

mkdir -p "$out"
m="$work/node_modules"
cp "$m/preact/dist/preact.module.js" "$out/preact.module.js"
cp "$m/preact/hooks/dist/hooks.module.js" "$out/hooks.module.js"
cp "$m/preact/LICENSE" "$out/preact.LICENSE"
cp "$m/htm/dist/htm.module.js" "$out/htm.module.js"
cp "$m/htm/LICENSE" "$out/htm.LICENSE"
cp "$m/graphql-ws/umd/graphql-ws.min.js" "$out/graphql-ws.min.js"
cp "$m/graphql-ws/LICENSE.md" "$out/graphql-ws.LICENSE.md"
