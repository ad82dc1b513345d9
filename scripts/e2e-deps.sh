#!/usr/bin/env bash
# Installs what the browser tests need without downloading any browser or
# driver from outside the package registries, and prints the environment
# they read as shell assignments (the Makefile evals them):
#   - Debian's chromium (apt-get, where it is missing and we are root);
#   - Node.js (likewise), which runs the Playwright driver;
#   - a Korean font (fonts-nanum, likewise), so that the screenshots of the
#     Korean pages show Hangul rather than empty boxes;
#   - the npm package playwright-core at exactly the version playwright-go
#     expects, unpacked into .cache/ (git-ignored).
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "e2e-deps: $*" >&2; }
can_apt() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; }
apt_install() {
  say "installing $* with apt-get"
  { apt-get install -y -qq --no-install-recommends "$@" || { apt-get update -qq && apt-get install -y -qq --no-install-recommends "$@"; }; } >&2
}

CHROMIUM=${CHROMIUM_PATH:-$(command -v chromium || true)}
if [ -z "$CHROMIUM" ]; then
  can_apt || { say "the browser tests need Chromium: install the chromium package"; exit 1; }
  apt_install chromium
  CHROMIUM=$(command -v chromium)
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  can_apt || { say "the browser tests need Node.js and npm: install the nodejs and npm packages"; exit 1; }
  apt_install nodejs npm
fi

if command -v fc-list >/dev/null && ! fc-list :lang=ko 2>/dev/null | grep -q . && can_apt; then
  apt_install fonts-nanum
fi

module=github.com/mxschmitt/playwright-go
# go list names the module's folder only once it is in the module cache,
# which a fresh machine's is not until something downloads it.
go mod download "$module" || { say "cannot download $module (go mod download)"; exit 1; }
dir=$(go list -m -f '{{.Dir}}' "$module")
# either `const playwrightCliVersion = "1.52.0"` or, inside a const block,
# `playwrightCliVersion = "1.64.1"`
version=$(sed -n 's/^\(const \|[[:space:]]*\)playwrightCliVersion = "\(.*\)"$/\2/p' "$dir/run.go")
[ -n "$version" ] || { say "cannot read the driver version from $dir/run.go"; exit 1; }
driver="$PWD/.cache/playwright-driver-$version"
if [ ! -f "$driver/package/cli.js" ]; then
  say "fetching playwright-core@$version from the npm registry"
  mkdir -p "$driver"
  tgz=$(cd "$driver" && npm pack --silent "playwright-core@$version")
  tar xzf "$driver/$tgz" -C "$driver"
  rm "$driver/$tgz"
fi
echo "export PLAYWRIGHT_DRIVER_PATH='$driver' PLAYWRIGHT_NODEJS_PATH='$(command -v node)' CHROMIUM_PATH='$CHROMIUM'"
