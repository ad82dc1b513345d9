#!/usr/bin/env bash
# Makes sure nginx (Debian's nginx package) is installed for the test that
# runs a sale through deploy/nginx.conf, and prints NGINX_PATH as a shell
# assignment (the Makefile evals it). It installs with apt-get where nginx
# is missing and we are root; otherwise it stops with one sentence. The
# package's own service is not used: the test starts its own nginx on free
# ports with a configuration of its own.
set -euo pipefail
say() { echo "nginx-deps: $*" >&2; }
NGINX=${NGINX_PATH:-$(command -v nginx || true)}
[ -z "$NGINX" ] && [ -x /usr/sbin/nginx ] && NGINX=/usr/sbin/nginx
if [ -z "$NGINX" ]; then
  { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; } || { say "the load-balancer test needs nginx: install the nginx package"; exit 1; }
  say "installing nginx with apt-get"
  # policy-rc.d keeps the package from starting its service on port 80.
  if [ ! -e /usr/sbin/policy-rc.d ]; then printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; trap 'rm -f /usr/sbin/policy-rc.d' EXIT; fi
  { apt-get install -y -qq -o DPkg::Lock::Timeout=120 --no-install-recommends nginx || { apt-get update -qq && apt-get install -y -qq -o DPkg::Lock::Timeout=120 --no-install-recommends nginx; }; } >&2 \
    || { say "apt-get could not install nginx"; exit 1; }
  NGINX=/usr/sbin/nginx
fi
echo "export NGINX_PATH='$NGINX'"
