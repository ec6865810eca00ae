#!/usr/bin/env bash
# Prints the directory of an official Node.js build of the given line (22, 24, 26, or an exact
# version), fetched from the npm registry, where the Node.js project publishes its builds as the
# package node-linux-<arch>: the directory holds bin/node and include/node, so that
#   PATH="$(scripts/node-line.sh 24)/bin:$PATH" npm_config_nodedir="$(scripts/node-line.sh 24)" npm ci
# runs npm on that Node.js and builds native modules (better-sqlite3) against its headers.
# The package carries no npm: npm is the one already on PATH, run by this Node.js.
#
# A build already fetched is kept in $NODE_LINES_CACHE (default ~/.cache/svc-notifications/node)
# and used again without a download; the registry is asked only which version is the line's newest.
# Usage: scripts/node-line.sh LINE            (needs npm and tar on PATH)
set -euo pipefail

line=${1:?usage: scripts/node-line.sh LINE (22, 24, 26 or an exact version)}
cache=${NODE_LINES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/svc-notifications/node}

say() { printf 'node-line: %s\n' "$*" >&2; }

case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64) arch=arm64 ;;
  *) say "no official Node.js package for $(uname -m)"; exit 1 ;;
esac
package=node-linux-$arch

# `npm view PKG@RANGE version` prints one line per matching version ("PKG@V 'V'"), or the bare
# version when one matches; the last line is the newest.
version=$(npm view "$package@$line" version 2>/dev/null | tail -n 1 | sed -E "s/.*'([^']+)'.*/\1/; s/^.*@//")
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { say "the registry has no $package@$line"; exit 1; }

dir=$cache/$version
if [ ! -x "$dir/bin/node" ] || [ ! -f "$dir/include/node/node.h" ]; then
  mkdir -p "$cache"
  work=$(mktemp -d "$cache/.fetch.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  say "fetching $package@$version"
  tarball=$(cd "$work" && npm pack --silent "$package@$version")
  tar -xzf "$work/$tarball" -C "$work"
  "$work/package/bin/node" --version >/dev/null
  rm -rf "$dir"
  # A rename, so that a run interrupted halfway never leaves a directory that looks complete.
  mv "$work/package" "$dir"
fi
printf '%s\n' "$dir"
