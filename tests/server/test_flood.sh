#!/bin/bash
# test_flood.sh ORK FIXTURES -- a normal client is served while 1,000 half-open connections
# are held (see flood.mjs).
ORK="$1"; FIX="$2"
MODEL="$FIX/models/stories260K.gguf"
[ -f "$MODEL" ] || { echo "SKIP: fixtures not found"; exit 77; }
command -v node >/dev/null || { echo "SKIP: node not installed (scripts/setup-deps installs it)"; exit 77; }
# 1,000 sockets plus the runtime's own need more than the common soft limit of 1024 files
ulimit -n 4096 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge 1200 ] ||
  { echo "SKIP: cannot raise the open-file limit to 1200 (is $(ulimit -n))"; exit 77; }
exec node "$(dirname "$0")/flood.mjs" "$ORK" "$MODEL"
