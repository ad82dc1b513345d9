#!/usr/bin/env bash
# Re-fetches the vendored front-end files in static/ from the npm registry at the
# pinned versions below. The copies are committed, so neither a build nor a test
# runs this; run it (make vendor) only to move to another version.
set -euo pipefail
cd "$(dirname "$0")/.."
HTMX=htmx.org@2.0.11
SSE=htmx-ext-sse@2.2.4
PICO=@picocss/pico@2.1.1
# the ALTCHA widget (MIT): 1.x speaks the classic protocol that package altcha checks
ALTCHA=altcha@1.5.1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "$HTMX" "$SSE" "$PICO" "$ALTCHA" >/dev/null)
for f in "$tmp"/*.tgz; do mkdir -p "${f%.tgz}" && tar xzf "$f" -C "${f%.tgz}"; done
cp "$tmp"/htmx.org-*/package/dist/htmx.min.js static/htmx.min.js
cp "$tmp"/htmx-ext-sse-*/package/dist/sse.min.js static/sse.min.js
cp "$tmp"/picocss-pico-*/package/css/pico.min.css static/pico.min.css
cp "$tmp"/altcha-*/package/dist/altcha.umd.cjs static/altcha.min.js
echo "static/: $HTMX, $SSE, $PICO, $ALTCHA"
