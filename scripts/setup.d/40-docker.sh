#!/usr/bin/env bash
# Docker for the tests marked `docker`: an engine, the Compose v2 plugin and the project's images,
# all from Debian's packages, the Go module proxy, PyPI and Maven Central (Docker Hub is not needed).
#   1. docker.io + debootstrap from Debian when missing (as root);
#   2. dockerd started when no engine answers and we can (root, binary present);
#   3. the compose plugin built with `go install` into ~/.docker/cli-plugins (by the Go toolchain from
#      the Go module proxy when no Go of 1.22 or later is on PATH);
#   4. rmqtwin-base:bookworm (debootstrap --variant=minbase | docker import), then rmqtwin:local and
#      rmqtwin-rocketmq:5.5.0 (docker/*.Dockerfile), each rebuilt only when the hash of what goes into
#      it changes (a label on the image), so a second run takes seconds.
# It never fails the set-up: whatever cannot be done is written to $CACHE/docker/status, and the docker
# tests skip with that reason (tests/docker/conftest.py). RMQTWIN_SKIP_DOCKER=1 skips it all.
#
# When: wherever the docker tests are about to run (scripts/test.sh sets RMQTWIN_DOCKER_TESTS=1: `make
# test`, `make test-all`) or asked for (`make docker`, RMQTWIN_DOCKER=1). The first run on a machine
# builds whatever is missing from nothing (packages, the compose plugin's Go build, the debootstrap base
# image, the images: about 6 min on an idle 2-core machine, half an hour under heavy load;
# benchmarks/bench_docker_setup.py); afterwards it starts the engine and rebuilds the project's images
# from the cached base when their inputs changed (seconds to a minute). `make docker` does that first run
# ahead of time. scripts/setup.sh on its own (a fresh .venv, a pull) leaves docker as it is.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
VENV=${VENV:-$ROOT/.venv}
CACHE=${RMQTWIN_CACHE:-$HOME/.cache/rmqtwin}
DIR=$CACHE/docker
STATUS=$DIR/status
BASE_IMAGE=${RMQTWIN_BASE_IMAGE:-rmqtwin-base:bookworm}
RMQTWIN_IMAGE=${RMQTWIN_IMAGE:-rmqtwin:local}
ROCKETMQ_VERSION=5.5.0
ROCKETMQ_IMAGE=${ROCKETMQ_LOCAL_IMAGE:-rmqtwin-rocketmq:$ROCKETMQ_VERSION}
COMPOSE_VERSION=v2.32.4
GO_TOOLCHAIN=go1.23.4
export DOCKER_BUILDKIT=0 # the classic builder: Debian's engine has no buildx
mkdir -p "$DIR"

# Each line carries the seconds since the step started, so CI logs show what the set-up cost.
log() { printf '[setup] docker: [%3ds] %s\n' "$SECONDS" "$*" >&2; }
give_up() {
  echo "$*" >"$STATUS"
  log "docker tests will skip: $*"
  exit 0
}
is_root() { [ "$(id -u)" = 0 ]; }
engine_up() { docker info >/dev/null 2>&1; }

[ "${RMQTWIN_SKIP_DOCKER:-0}" = 1 ] && give_up "RMQTWIN_SKIP_DOCKER=1 was set for the set-up"
if [ "${RMQTWIN_DOCKER_TESTS:-0}" != 1 ] && [ "${RMQTWIN_DOCKER:-0}" != 1 ] && [ "${RMQTWIN_TEST_ALL:-0}" != 1 ]; then
  log "left as it is (make test and make docker set it up)"
  exit 0
fi

# 1. Packages.
if ! command -v dockerd >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
  if is_root && command -v apt-get >/dev/null 2>&1 && [ "${RMQTWIN_SKIP_APT:-0}" != 1 ]; then
    log "installing docker.io and debootstrap from Debian's packages"
    (export DEBIAN_FRONTEND=noninteractive; apt-get update -qq && apt-get install -y -qq docker.io debootstrap >/dev/null) \
      || log "apt-get install docker.io debootstrap failed"
  fi
fi
command -v docker >/dev/null 2>&1 \
  || give_up "no docker client (Debian package docker.io not installed$(is_root || echo ', and set-up is not root'))"

# 2. Engine.
if ! engine_up; then
  if is_root && command -v dockerd >/dev/null 2>&1; then
    log "starting dockerd (log: $DIR/dockerd.log)"
    # Without the descriptors this shell inherited above 2: a lock its caller holds (a slot of a job
    # limiter, say) would otherwise stay held by the daemon for as long as it runs.
    (
      for fd in /proc/$BASHPID/fd/*; do
        n=${fd##*/}
        [ "$n" -gt 2 ] 2>/dev/null && eval "exec $n>&-"
      done
      exec setsid nohup dockerd >"$DIR/dockerd.log" 2>&1 </dev/null
    ) &
    for _ in $(seq 60); do engine_up && break; sleep 1; done
  fi
  engine_up || give_up "no Docker engine answers ($(docker info 2>&1 | grep -m1 -i error || echo 'docker info failed'))$(is_root || echo '; set-up is not root, so it cannot start dockerd')"
fi

# 3. Compose v2 plugin, built by a Go of at least 1.22: the one on PATH, or else the toolchain the Go
# module proxy serves (golang.org/toolchain, what GOTOOLCHAIN downloads; Debian's golang-go is 1.19).
go_recent() {
  local version
  version=$("$1" env GOVERSION 2>/dev/null) || return 1
  version=${version#go}
  local major=${version%%.*} rest=${version#*.}
  local minor=${rest%%.*}
  [ "$major" -gt 1 ] 2>/dev/null || [ "${minor%%[!0-9]*}" -ge 22 ] 2>/dev/null
}
go_toolchain() {
  if command -v go >/dev/null 2>&1 && go_recent go; then
    command -v go
    return
  fi
  local arch
  case $(uname -m) in x86_64) arch=amd64 ;; aarch64) arch=arm64 ;; *) return 1 ;; esac
  local name=v0.0.1-$GO_TOOLCHAIN.linux-$arch
  if [ ! -x "$DIR/$GO_TOOLCHAIN/bin/go" ]; then
    command -v unzip >/dev/null 2>&1 || return 1
    log "fetching the Go toolchain $GO_TOOLCHAIN from the Go module proxy (about 75 MB)"
    local tmp
    tmp=$(mktemp -d "$DIR/go.XXXXXX")
    curl -fsSL -o "$tmp/go.zip" "${RMQTWIN_GOPROXY:-https://proxy.golang.org}/golang.org/toolchain/@v/$name.zip" \
      && unzip -q "$tmp/go.zip" -d "$tmp" \
      && rm -rf "${DIR:?}/$GO_TOOLCHAIN" && mv "$tmp/golang.org/toolchain@$name" "$DIR/$GO_TOOLCHAIN"
    rm -rf "$tmp"
  fi
  [ -x "$DIR/$GO_TOOLCHAIN/bin/go" ] && go_recent "$DIR/$GO_TOOLCHAIN/bin/go" && echo "$DIR/$GO_TOOLCHAIN/bin/go"
}
if ! docker compose version >/dev/null 2>&1; then
  GO=$(go_toolchain) || give_up "the docker compose plugin is missing, no Go of 1.22 or later is on PATH, and the Go toolchain $GO_TOOLCHAIN could not be fetched from the Go module proxy (curl and unzip needed)"
  log "building the compose plugin $COMPOSE_VERSION with $GO install (about 1.5 min)"
  GOTOOLCHAIN=local GOBIN=$DIR/gobin "$GO" install "github.com/docker/compose/v2/cmd@$COMPOSE_VERSION" >"$DIR/compose-build.log" 2>&1 \
    || give_up "go install github.com/docker/compose/v2/cmd@$COMPOSE_VERSION failed (see $DIR/compose-build.log)"
  mkdir -p "$HOME/.docker/cli-plugins"
  install -m 0755 "$DIR/gobin/cmd" "$HOME/.docker/cli-plugins/docker-compose"
  docker compose version >/dev/null 2>&1 || give_up "docker compose version fails after installing the plugin"
  log "compose plugin built"
fi

# 4. Images, each labelled with the hash of its inputs.
label() { docker image inspect --format '{{ index .Config.Labels "org.rmqtwin.hash" }}' "$1" 2>/dev/null; }
hash_files() { sort | xargs -d '\n' sha256sum | sha256sum | cut -c1-16; }

if ! docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
  is_root || give_up "image $BASE_IMAGE missing and debootstrap needs root"
  command -v debootstrap >/dev/null 2>&1 || give_up "image $BASE_IMAGE missing and debootstrap is not installed"
  log "building $BASE_IMAGE with debootstrap --variant=minbase bookworm (about 40 s)"
  rootfs=$(mktemp -d "$DIR/rootfs.XXXXXX")
  if debootstrap --variant=minbase bookworm "$rootfs" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" \
    >"$DIR/debootstrap.log" 2>&1; then
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" -c . | docker import -c 'CMD ["bash"]' - "$BASE_IMAGE" >/dev/null
  fi
  rm -rf "$rootfs"
  docker image inspect "$BASE_IMAGE" >/dev/null 2>&1 || give_up "debootstrap of $BASE_IMAGE failed (see $DIR/debootstrap.log)"
  log "$BASE_IMAGE built"
fi

# rmqtwin: the wheels of the tree and its dependencies, built on the host.
want=$( (git ls-files -co --exclude-standard -- rmqtwin codec fakes store_mirror proxy conformance spark \
  setup.py pyproject.toml README.md MANIFEST.in | grep -v '^conformance/java/'; echo docker/rmqtwin.Dockerfile) \
  | while read -r f; do [ -f "$f" ] && echo "$f"; done | hash_files)
if [ "$(label "$RMQTWIN_IMAGE")" != "$want" ]; then
  log "building $RMQTWIN_IMAGE"
  ctx=$(mktemp -d "$DIR/ctx-rmqtwin.XXXXXX")
  if "$VENV/bin/python" -m pip wheel -q --wheel-dir "$ctx/wheels" "$ROOT" >"$DIR/rmqtwin-build.log" 2>&1 \
    && docker build -q -f docker/rmqtwin.Dockerfile --build-arg "BASE=$BASE_IMAGE" \
      --label "org.rmqtwin.hash=$want" -t "$RMQTWIN_IMAGE" "$ctx" >>"$DIR/rmqtwin-build.log" 2>&1; then
    :
  else
    rm -rf "$ctx"
    give_up "building image $RMQTWIN_IMAGE failed (see $DIR/rmqtwin-build.log)"
  fi
  rm -rf "$ctx" "$ROOT/build"
  log "$RMQTWIN_IMAGE built"
fi

# rocketmq: Debian's JRE 17 and the launcher's jars (fetched by 10-rocketmq.sh).
lib=$CACHE/rocketmq/$ROCKETMQ_VERSION/lib
[ -n "$(ls "$lib" 2>/dev/null)" ] || give_up "image $ROCKETMQ_IMAGE needs the RocketMQ $ROCKETMQ_VERSION jars in $lib (rmqtwin real fetch)"
want=$( (ls -d "$lib"/*.jar; find docker/rocketmq -type f; echo docker/rocketmq.Dockerfile) | hash_files)
if [ "$(label "$ROCKETMQ_IMAGE")" != "$want" ]; then
  log "building $ROCKETMQ_IMAGE"
  ctx=$(mktemp -d "$DIR/ctx-rocketmq.XXXXXX")
  cp -r docker/rocketmq/bin "$ctx/bin"
  cp -rl "$lib" "$ctx/lib" 2>/dev/null || { rm -rf "$ctx/lib"; cp -r "$lib" "$ctx/lib"; }
  if ! docker build -q -f docker/rocketmq.Dockerfile --build-arg "BASE=$BASE_IMAGE" \
    --build-arg "ROCKETMQ_VERSION=$ROCKETMQ_VERSION" --label "org.rmqtwin.hash=$want" -t "$ROCKETMQ_IMAGE" \
    "$ctx" >"$DIR/rocketmq-build.log" 2>&1; then
    rm -rf "$ctx"
    give_up "building image $ROCKETMQ_IMAGE failed (see $DIR/rocketmq-build.log)"
  fi
  rm -rf "$ctx"
  log "$ROCKETMQ_IMAGE built"
fi

# Earlier versions of the project's images and the build stages they left behind (untagged only).
docker image prune -f --filter label=org.rmqtwin.hash >/dev/null 2>&1
docker image prune -f --filter label=org.rmqtwin.stage >/dev/null 2>&1

echo ok >"$STATUS"
log "engine $(docker version --format '{{.Server.Version}}'), compose $(docker compose version --short), images ready"
