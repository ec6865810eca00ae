#!/usr/bin/env bash
# Makes the base image the Dockerfile builds on, node:24-bookworm-slim, available to the local
# Docker engine: kept if it is already there, pulled if the registry answers, and otherwise built
# here as a stand-in, the way an air-gapped site builds:
#   - Debian bookworm (minbase) from a Debian mirror, by debootstrap;
#   - the official Node.js build of the image's line (24 for node:24-bookworm-slim), which the
#     Node.js project publishes on the npm registry (scripts/node-line.sh fetches it), and the npm
#     that line ships (npm 11; 10 for Node.js 22), from the npm registry, in /usr/local, as the
#     official image has them;
#   - Node's headers in /usr/local/include/node, and npm_config_nodedir pointing at them, so that
#     a native module builds without downloading headers (better-sqlite3 needs none: it comes
#     built);
#   - this machine's CA bundle, named by NODE_EXTRA_CA_CERTS, so that npm trusts the same
#     registry (or mirror, or TLS-inspecting proxy) this machine trusts;
#   - the user `node` (uid and gid 1000), as in the official image.
#
# Usage: deploy/docker/build-node-base.sh [IMAGE]      (run as root; needs debootstrap, docker,
# and npm and tar to fetch Node.js and npm)
# Settings: DEBIAN_MIRROR (default http://deb.debian.org/debian), CA_BUNDLE (default
# $NODE_EXTRA_CA_CERTS, else /etc/ssl/certs/ca-certificates.crt), PULL_TIMEOUT (seconds, 60),
# NODE_LINES_CACHE (where scripts/node-line.sh keeps the Node.js builds it fetched).
set -euo pipefail

image=${1:-node:24-bookworm-slim}
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

# The image's tag names the Node.js line (node:22-bookworm-slim) or an exact version.
tag=${image##*:}
line=${tag%%-*}
[[ $line =~ ^[0-9]+(\.[0-9]+\.[0-9]+)?$ ]] || { say "no Node.js line in the tag of $image"; exit 1; }
case ${line%%.*} in
  22) npm_line=10 ;;
  *) npm_line=11 ;;
esac
say "$image cannot be pulled: building a stand-in from Debian bookworm and the official Node.js $line"

[ -f "$ca_bundle" ] || { say "no CA bundle at $ca_bundle (set CA_BUNDLE)"; exit 1; }
command -v debootstrap >/dev/null || { say "debootstrap is missing: apt-get install debootstrap"; exit 1; }

node_dir=$("$(dirname "${BASH_SOURCE[0]}")/../../scripts/node-line.sh" "$line")
node_version=$("$node_dir/bin/node" -p 'process.versions.node')

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/rootfs

npm_tarball=$(cd "$work" && npm pack --silent "npm@$npm_line")
mkdir "$work/npm"
tar -xzf "$work/$npm_tarball" -C "$work/npm" --no-same-owner

debootstrap --variant=minbase bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
  { tail -n 20 "$work/debootstrap.log" >&2; say "debootstrap failed"; exit 1; }

install -D -m 0755 "$node_dir/bin/node" "$root/usr/local/bin/node"
mkdir -p "$root/usr/local/include" "$root/usr/local/lib/node_modules" "$root/usr/local/etc/ssl"
cp -a "$node_dir/include/node" "$root/usr/local/include/node"
mv "$work/npm/package" "$root/usr/local/lib/node_modules/npm"
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
  --change "LABEL org.opencontainers.image.description=\"stand-in for $image, built by build-node-base.sh\"" \
  --change 'CMD ["node"]' \
  - "$image" >/dev/null
say "built $image (Node.js $node_version): $(docker image inspect --format '{{.Size}}' "$image") bytes"
