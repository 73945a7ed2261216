# npm_deps.sh -- sourced by the server tests that need npm packages (the openai client,
# playwright-core): `npm_deps PREFIX` installs tests/server/node's package-lock.json into PREFIX
# (the build tree; ORK_NPM_PREFIX from CTest) with npm ci, once per lock file, under a lock so
# parallel tests share one install. Returns 0; exits 77 (skip) when npm is absent or the
# registry cannot be reached -- except under CI (CI=true), where that is a failure (exit 1):
# CI must test with the packages.
npm_deps() {
  local prefix="$1" src
  src="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/node"
  local fail=77
  [ "${CI:-}" = "true" ] && fail=1
  command -v npm >/dev/null || { echo "SKIP: npm not installed (scripts/setup-deps installs it)"; exit $fail; }
  mkdir -p "$prefix"
  (
    flock 9
    if ! cmp -s "$src/package-lock.json" "$prefix/package-lock.json" ||
       [ ! -f "$prefix/node_modules/.package-lock.json" ]; then
      cp "$src/package.json" "$src/package-lock.json" "$prefix/"
      if ! (cd "$prefix" && timeout 180 npm ci --no-audit --no-fund --silent) >"$prefix/install.log" 2>&1; then
        rm -f "$prefix/package-lock.json"
        echo "npm ci failed (no registry access?):"; tail -5 "$prefix/install.log"
        exit 3
      fi
    fi
  ) 9>"$prefix/.lock"
  local rc=$?
  [ $rc -eq 0 ] || { echo "SKIP: the npm packages of tests/server/node could not be installed"; exit $fail; }
}
