#!/bin/bash
# test_openai_client.sh ORK FIXTURES -- the official `openai` npm client completes a chat and a
# streamed chat against `ork serve` (see openai_client.mjs). The client (tests/server/node's
# package-lock.json) is installed with npm ci into $ORK_NPM_PREFIX (the build tree; set by
# CTest) on first use (npm_deps.sh); skips without node/npm or the registry, except under CI.
ORK="$1"; FIX="$2"
MODEL="$FIX/models/stories260K.gguf"
[ -f "$MODEL" ] || { echo "SKIP: fixtures not found"; exit 77; }
command -v node >/dev/null && command -v npm >/dev/null ||
  { echo "SKIP: node/npm not installed (scripts/setup-deps installs them)"; exit 77; }
PREFIX="${ORK_NPM_PREFIX:-$(dirname "$ORK")/npm}"
. "$(dirname "$0")/npm_deps.sh"
npm_deps "$PREFIX"
exec node "$(dirname "$0")/openai_client.mjs" "$ORK" "$MODEL" "$PREFIX"
