#!/bin/bash
# test_tool_stream.sh ORK FIXTURES -- streamed OpenAI tool calls (see tool_stream.mjs).
ORK="$1"; FIX="$2"
MODEL="$FIX/models/stories260K.gguf"
[ -f "$MODEL" ] || { echo "SKIP: fixtures not found"; exit 77; }
command -v node >/dev/null || { echo "SKIP: node not installed (scripts/setup-deps installs it)"; exit 77; }
exec node "$(dirname "$0")/tool_stream.mjs" "$ORK" "$MODEL"
