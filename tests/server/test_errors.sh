#!/bin/bash
# test_api.sh ORK FIXTURES -- `ork serve` bad requests get 4xx errors and the server keeps serving (see errors.mjs).
ORK="$1"; FIX="$2"
MODEL="$FIX/models/stories260K.gguf"
[ -f "$MODEL" ] || { echo "SKIP: fixtures not found"; exit 77; }
command -v node >/dev/null || { echo "SKIP: node not installed (scripts/setup-deps installs it)"; exit 77; }
exec node "$(dirname "$0")/errors.mjs" "$ORK" "$MODEL"
