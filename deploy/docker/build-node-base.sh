#!/usr/bin/env bash
# Makes the base image the Dockerfile builds on, node:20-bookworm-slim, available to the local
# Docker engine: kept if it is already there, pulled if the registry answers, and otherwise built
# here as a stand-in, the way an air-gapped site builds:
#   - Debian bookworm (minbase) from a Debian mirror, by debootstrap;
#   - this machine's Node.js 20 and npm in /usr/local, as the official image has them;
#   - Node's headers in /usr/local/include/node, and npm_config_nodedir pointing at them, so that
#     native modules (better-sqlite3) build without downloading headers;
#   - this machine's CA bundle, named by NODE_EXTRA_CA_CERTS, so that npm trusts the same
#     registry (or mirror, or TLS-inspecting proxy) this machine trusts;
#   - the user `node` (uid and gid 1000), as in the official image.
#
# Usage: deploy/docker/build-node-base.sh [IMAGE]      (run as root; needs debootstrap and docker)
# Settings: DEBIAN_MIRROR (default http://deb.debian.org/debian), CA_BUNDLE (default
# $NODE_EXTRA_CA_CERTS, else /etc/ssl/certs/ca-certificates.crt), PULL_TIMEOUT (seconds, 60).
set -euo pipefail

image=${1:-node:20-bookworm-slim}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
ca_bundle=${CA_BUNDLE:-${NODE_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}}

say() { printf 'build-node-base: %s\n' "$*" >&2; }

if docker image inspect "$image" >/dev/null 2>&1; then
  say "$image is already here"
  exit 0
fi
if timeout "${PULL_TIMEOUT:-60}" docker pull "$image" >/dev/null 2>&1; then
  say "pulled $image"
  exit 0
fi
say "$image cannot be pulled: building a stand-in from Debian bookworm and this machine's Node.js"

node_bin=$(command -v node) || { say "node is not on PATH"; exit 1; }
node_version=$(node -p 'process.versions.node')
[ "${node_version%%.*}" = 20 ] || { say "this machine's Node.js is $node_version, not 20"; exit 1; }
node_prefix=$(dirname "$(dirname "$(readlink -f "$node_bin")")")
npm_dir=$(npm root -g)/npm
[ -f "$node_prefix/include/node/node.h" ] || { say "Node's headers are not in $node_prefix/include/node"; exit 1; }
[ -d "$npm_dir" ] || { say "npm is not in $npm_dir"; exit 1; }
[ -f "$ca_bundle" ] || { say "no CA bundle at $ca_bundle (set CA_BUNDLE)"; exit 1; }
command -v debootstrap >/dev/null || { say "debootstrap is missing: apt-get install debootstrap"; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/rootfs

debootstrap --variant=minbase bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
  { tail -n 20 "$work/debootstrap.log" >&2; say "debootstrap failed"; exit 1; }

install -D -m 0755 "$node_bin" "$root/usr/local/bin/node"
mkdir -p "$root/usr/local/include" "$root/usr/local/lib/node_modules" "$root/usr/local/etc/ssl"
cp -a "$node_prefix/include/node" "$root/usr/local/include/node"
cp -a "$npm_dir" "$root/usr/local/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
install -m 0644 "$ca_bundle" "$root/usr/local/etc/ssl/ca-bundle.crt"

chroot "$root" groupadd --gid 1000 node
chroot "$root" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/archives/*.deb "$root"/var/log/* "$root"/tmp/*

tar -C "$root" -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change "ENV NODE_VERSION=$node_version" \
  --change 'ENV NODE_EXTRA_CA_CERTS=/usr/local/etc/ssl/ca-bundle.crt' \
  --change 'ENV npm_config_nodedir=/usr/local' \
  --change 'LABEL org.opencontainers.image.description="stand-in for node:20-bookworm-slim, built by build-node-base.sh"' \
  --change 'CMD ["node"]' \
  - "$image" >/dev/null
say "built $image (Node.js $node_version): $(docker image inspect --format '{{.Size}}' "$image") bytes"
