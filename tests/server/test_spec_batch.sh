#!/bin/bash
# test_spec_batch.sh ORK FIXTURES -- `ork serve`: speculating slots verified in the same forward
# as the plain slots, token-identical to one request at a time (see spec_batch.mjs).
ORK="$1"; FIX="$2"
MODEL="$FIX/models/stories260K.gguf"
DRAFT="$FIX/models/stories260K-Q8_0.gguf"
[ -f "$MODEL" ] && [ -f "$DRAFT" ] || { echo "SKIP: fixtures not found"; exit 77; }
command -v node >/dev/null || { echo "SKIP: node not installed (scripts/setup-deps installs it)"; exit 77; }
exec node "$(dirname "$0")/spec_batch.mjs" "$ORK" "$MODEL" "$DRAFT"
