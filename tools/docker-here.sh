#!/usr/bin/env bash
# A Docker daemon for the container workers (`pgarena run --local --container-workers`, `--aws-strict`,
# tests/integration/test_container_workers.py) on a machine where none runs, and the worker image's
# base when no registry image can be pulled. Idempotent; prints the DOCKER_HOST to use:
#
#   eval "$(tools/docker-here.sh)"
#
# A daemon already answering (DOCKER_HOST or the default socket) is used as it is. Otherwise, as root:
# Debian's docker.io is installed when missing and dockerd is started with vfs storage (works inside
# any container or VM; overlay2 where the kernel allows it) and no bridge: builds and containers use the host's network
# (`docker build --network host`, `docker run --network host`), so a worker reaches the moto server
# and an embedded PostgreSQL server on 127.0.0.1. The base image (PGARENA_DOCKER_BASE, default
# debian:bookworm-slim) is made with debootstrap from the machine's own Debian package source when
# it cannot be pulled.
set -euo pipefail
base=${PGARENA_DOCKER_BASE:-debian:bookworm-slim}
dir=${PGARENA_DOCKER_DIR:-/tmp/pgarena-docker}
log() { echo "docker-here: $*" >&2; }
apt_install() {
  [[ $(id -u) == 0 ]] || { log "$* missing and not root: install it (Debian: apt-get install $*)"; exit 1; }
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

start_dockerd() {  # $1: storage driver; true once the daemon answers
  log "starting dockerd with $1 storage (log: $dir/dockerd.log)"
  nohup dockerd --data-root "$dir/data-$1" --exec-root "$dir/exec" --pidfile "$dir/dockerd.pid" \
    --storage-driver "$1" --iptables=false --ip-masq=false --bridge=none -H "$DOCKER_HOST" \
    >"$dir/dockerd.log" 2>&1 &
  local pid=$!
  for _ in $(seq 120); do
    docker info >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.5
  done
  return 1
}

if ! command -v docker >/dev/null || ! docker info >/dev/null 2>&1; then
  export DOCKER_HOST=unix://$dir/docker.sock
  if ! docker info >/dev/null 2>&1; then
    command -v dockerd >/dev/null && command -v docker >/dev/null || { log "installing docker.io"; apt_install docker.io; }
    mkdir -p "$dir"
    # overlay2 where the kernel has overlayfs and the data root is not itself on overlayfs (a container's
    # root): each instruction and container then costs a layer, not a copy of the image as under vfs.
    drivers=vfs
    if grep -qw overlay /proc/filesystems && [[ $(stat -f -c %T "$dir") != overlayfs ]]; then drivers="overlay2 vfs"; fi
    for driver in ${PGARENA_DOCKER_STORAGE:-$drivers}; do
      start_dockerd "$driver" && break
      [[ -f $dir/dockerd.pid ]] && kill "$(cat "$dir/dockerd.pid")" 2>/dev/null || true
      sleep 1
    done
    docker info >/dev/null 2>&1 || { log "dockerd did not start; see $dir/dockerd.log"; exit 1; }
  fi
fi

if ! docker image inspect "$base" >/dev/null 2>&1 && ! timeout 60 docker pull -q "$base" >/dev/null 2>&1; then
  suite=${base#*:}
  suite=${suite%%-*}
  command -v debootstrap >/dev/null || apt_install debootstrap
  mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  [[ -n $mirror ]] || mirror=$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  [[ -n $mirror ]] || mirror=http://deb.debian.org/debian
  mkdir -p "$dir"
  root=$(mktemp -d)
  log "building $base with debootstrap ($suite from $mirror, about a minute)"
  debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$dir/debootstrap.log" 2>&1 \
    || { log "debootstrap failed; see $dir/debootstrap.log"; rm -rf "$root"; exit 1; }
  # What the registry's slim image leaves out too: apt lists and caches.
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/archives/*.deb
  tar -C "$root" -c . | docker import - "$base" >/dev/null
  rm -rf "$root"
fi
echo "export DOCKER_HOST=${DOCKER_HOST:-unix:///var/run/docker.sock}"
