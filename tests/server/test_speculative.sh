#!/bin/bash
# test_speculative.sh ORK FIXTURES -- `ork serve` speculative decoding and batched decode on the
# simulator (see speculative.mjs).
ORK="$1"; FIX="$2"
MODEL="$FIX/models/stories260K.gguf"
DRAFT="$FIX/models/stories260K-Q8_0.gguf"
[ -f "$MODEL" ] && [ -f "$DRAFT" ] || { echo "SKIP: fixtures not found"; exit 77; }
command -v node >/dev/null || { echo "SKIP: node not installed (scripts/setup-deps installs it)"; exit 77; }
exec node "$(dirname "$0")/speculative.mjs" "$ORK" "$MODEL" "$DRAFT"
