#!/bin/bash
# test_openai_client.sh ORK FIXTURES -- the official `openai` npm client completes a chat and a
# streamed chat against `ork serve` (see openai_client.mjs). The client is installed with npm
# into $ORK_NPM_PREFIX (the build tree; set by CTest) on first use; skips without node/npm or
# when the npm registry cannot be reached.
ORK="$1"; FIX="$2"
MODEL="$FIX/models/stories260K.gguf"
[ -f "$MODEL" ] || { echo "SKIP: fixtures not found"; exit 77; }
command -v node >/dev/null && command -v npm >/dev/null ||
  { echo "SKIP: node/npm not installed (scripts/setup-deps installs them)"; exit 77; }
PREFIX="${ORK_NPM_PREFIX:-$(dirname "$ORK")/npm}"
# Major version 4: CommonJS entry point, chat/completions/models APIs used here.
OPENAI_SPEC="openai@4"
if [ ! -f "$PREFIX/node_modules/openai/package.json" ]; then
  mkdir -p "$PREFIX"
  if ! timeout 90 npm install --prefix "$PREFIX" --no-audit --no-fund --silent "$OPENAI_SPEC" \
       >"$PREFIX/install.log" 2>&1; then
    echo "SKIP: npm install $OPENAI_SPEC failed (no registry access?):"; tail -5 "$PREFIX/install.log"
    exit 77
  fi
fi
exec node "$(dirname "$0")/openai_client.mjs" "$ORK" "$MODEL" "$PREFIX"
