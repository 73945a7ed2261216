#!/bin/bash
# test_constrained.sh ORK FIXTURES -- `ork serve` constrained output: grammar, json_schema,
# response_format (see constrained.mjs).
ORK="$1"; FIX="$2"
MODEL="$FIX/models/stories260K.gguf"
[ -f "$MODEL" ] || { echo "SKIP: fixtures not found"; exit 77; }
command -v node >/dev/null || { echo "SKIP: node not installed (scripts/setup-deps installs it)"; exit 77; }
exec node "$(dirname "$0")/constrained.mjs" "$ORK" "$MODEL"
