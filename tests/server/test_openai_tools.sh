#!/bin/bash
# test_openai_tools.sh ORK FIXTURES -- tool calls through the official `openai` npm client (see
# openai_tools.mjs); the packages come from tests/server/node (npm_deps.sh).
ORK="$1"; FIX="$2"
MODEL="$FIX/models/stories260K.gguf"
[ -f "$MODEL" ] || { echo "SKIP: fixtures not found"; exit 77; }
command -v node >/dev/null || { echo "SKIP: node not installed (scripts/setup-deps installs it)"; exit 77; }
PREFIX="${ORK_NPM_PREFIX:-$(dirname "$ORK")/npm}"
. "$(dirname "$0")/npm_deps.sh"
npm_deps "$PREFIX"
exec node "$(dirname "$0")/openai_tools.mjs" "$ORK" "$MODEL" "$PREFIX"
