#!/bin/bash
# test_tools.sh ORK FIXTURES -- `ork serve` OpenAI tool calls (see tools.mjs).
ORK="$1"; FIX="$2"
MODEL="$FIX/models/stories260K.gguf"
[ -f "$MODEL" ] || { echo "SKIP: fixtures not found"; exit 77; }
command -v node >/dev/null || { echo "SKIP: node not installed (scripts/setup-deps installs it)"; exit 77; }
exec node "$(dirname "$0")/tools.mjs" "$ORK" "$MODEL"
