#!/bin/bash
# test_webui.sh ORK FIXTURES -- the built-in web chat page in headless Chromium (webui.mjs):
# the Debian chromium package, driven by playwright-core from tests/server/node (npm_deps.sh).
# Skips with a reason when chromium, node or the packages are absent (under CI a missing
# chromium or package is a failure: CI installs them).
ORK="$1"; FIX="$2"
MODEL="$FIX/models/stories260K.gguf"
[ -f "$MODEL" ] || { echo "SKIP: fixtures not found"; exit 77; }
fail=77
[ "${CI:-}" = "true" ] && fail=1
command -v node >/dev/null || { echo "SKIP: node not installed (scripts/setup-deps installs it)"; exit $fail; }
CHROMIUM="$(command -v chromium || true)"
[ -n "$CHROMIUM" ] || { echo "SKIP: chromium not installed (scripts/setup-deps installs it)"; exit $fail; }
PREFIX="${ORK_NPM_PREFIX:-$(dirname "$ORK")/npm}"
. "$(dirname "$0")/npm_deps.sh"
npm_deps "$PREFIX"
exec node "$(dirname "$0")/webui.mjs" "$ORK" "$MODEL" "$PREFIX" "$CHROMIUM"
