#!/usr/bin/env bash
# Builds the runtime image of docker/Dockerfile without a Docker engine and smoke-tests it.
#
#   sudo docker/verify.sh
#
# 1. A Debian bookworm root made with debootstrap from the mirror the host's apt uses,
#    cached in $KIDLEDGER_ROOTFS_CACHE (default /var/tmp/kidledger-rootfs).
# 2. swift build -c release --product kidledger-server --static-swift-stdlib --traits Postgres
#    (the image's default SWIFT_TRAITS; scratch path .build-release, which the Dockerfile's
#    `prebuilt` stage copies from).
# 3. The Dockerfile's runtime stage built by `buildah bud --isolation chroot` on that root
#    (RUNTIME_IMAGE = the debootstrap root, BINARY_STAGE=prebuilt). A failing build fails
#    the script; only KIDLEDGER_NO_BUILDAH=1 assembles the filesystem by hand instead.
# 4. The image's filesystem is entered with chroot as user kidledger, read-only except
#    /data and a tmpfs /tmp (as docker/compose.yaml runs it): the server starts on an
#    ephemeral loopback port, /healthz, /readyz, /openapi.yaml, POST /v1/accounts and
#    GET /v1/me are probed, the HEALTHCHECK command is run, SIGTERM must end it with
#    exit code 0.
#
# Network: apt-get and debootstrap fetch from the host's Debian mirror; everything else
# stays on 127.0.0.1. Afterwards the working container and the built image are removed
# and every mount is undone, also on failure; the debootstrap root and the base image
# made from it (localhost/kidledger-bookworm-base) stay as a cache.
#
# Environment:
#   KIDLEDGER_ROOTFS_CACHE   cache folder (default /var/tmp/kidledger-rootfs)
#   KIDLEDGER_SKIP_BUILD=1   use the existing .build-release binary
#   KIDLEDGER_NO_BUILDAH=1   skip buildah and assemble the filesystem by hand from the
#                            Dockerfile's steps (for hosts where buildah cannot run)
#   KIDLEDGER_KEEP=1         keep the built image and its working container (mounted)
#
# Needs root (debootstrap, chroot, mounts) on a Debian 12 host with a Swift 6 toolchain on
# PATH. Installs debootstrap, buildah, curl and jq with apt-get when they are missing.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${KIDLEDGER_ROOTFS_CACHE:-/var/tmp/kidledger-rootfs}
SUITE=bookworm
BASE_PACKAGES=libsqlite3-0,libssl3,zlib1g,libpq5,ca-certificates
BASE_IMAGE=localhost/kidledger-bookworm-base:latest
IMAGE=localhost/kidledger-server:verify
export BUILDAH_ISOLATION=chroot

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf 'verify: FAILED: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (debootstrap, chroot and mounts need it)"

# --- tools -------------------------------------------------------------------------
need=()
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v buildah >/dev/null || need+=(buildah)
command -v curl >/dev/null || need+=(curl)
command -v jq >/dev/null || need+=(jq)
pkg-config --exists libpq 2>/dev/null || need+=(libpq-dev)
if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

# --- 1. debootstrap root --------------------------------------------------------------
# The mirror is whatever the host's apt uses for the suite (deb822 .sources or one-line
# .list files); nothing is hard-coded.
apt_mirror() {
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        awk -v suite="$SUITE" '
            function flush() { if (isdeb && hassuite && uri != "" && !found) { print uri; found = 1 } isdeb = hassuite = 0; uri = "" }
            /^[ \t]*#/ { next }
            /^[ \t]*$/ { flush(); next }
            tolower($1) == "types:" { for (i = 2; i <= NF; i++) if ($i == "deb") isdeb = 1 }
            tolower($1) == "uris:" { uri = $2 }
            tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == suite) hassuite = 1 }
            tolower($1) == "enabled:" && tolower($2) == "no" { isdeb = 0 }
            END { flush() }' "$f"
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        awk -v suite="$SUITE" '
            $1 == "deb" {
                i = 2
                if ($i ~ /^\[/) { while ($i !~ /\]$/ && i < NF) i++; i++ }
                if ($(i + 1) == suite) print $i
            }' "$f"
    done
}
MIRROR=$(apt_mirror | head -n 1)
[ -n "$MIRROR" ] || die "no apt source for $SUITE in /etc/apt/sources.list*"
# debootstrap does not read apt's configuration: pass on a configured HTTP proxy.
proxy=$(apt-config dump 2>/dev/null | sed -n 's/^Acquire::http::Proxy "\(.*\)";$/\1/p' | head -n 1)
if [ -n "$proxy" ] && [ -z "${http_proxy:-}" ]; then export http_proxy=$proxy; fi

# One cached root per package list, so a root made for an older list is not reused.
ROOTFS=$CACHE/$SUITE-base-$(printf %s "$BASE_PACKAGES" | md5sum | cut -c1-8)
if [ ! -f "$ROOTFS/.kidledger-complete" ]; then
    log "debootstrap $SUITE from $MIRROR into $ROOTFS (cached for later runs)"
    mkdir -p "$CACHE"
    rm -rf "$ROOTFS.tmp"
    debootstrap --variant=minbase --include="$BASE_PACKAGES" "$SUITE" "$ROOTFS.tmp" "$MIRROR" \
        > "$CACHE/debootstrap.log" 2>&1 || { tail -n 20 "$CACHE/debootstrap.log" >&2; die "debootstrap"; }
    # Like the slim images: no package lists, so the image's own `apt-get update` runs.
    rm -rf "$ROOTFS.tmp/var/lib/apt/lists/"* "$ROOTFS.tmp/var/cache/apt/archives/"*.deb
    touch "$ROOTFS.tmp/.kidledger-complete"
    rm -rf "$ROOTFS"
    mv "$ROOTFS.tmp" "$ROOTFS"
else
    log "using cached $SUITE root $ROOTFS"
fi

# --- 2. release binary ---------------------------------------------------------------
BIN=$REPO/.build-release/release/kidledger-server
if [ "${KIDLEDGER_SKIP_BUILD:-0}" != 1 ]; then
    command -v swift >/dev/null || die "no swift on PATH (a Swift 6 toolchain builds the binary)"
    log "swift build -c release --product kidledger-server --static-swift-stdlib --traits Postgres"
    (cd "$REPO" && swift build -c release --product kidledger-server --static-swift-stdlib --traits Postgres \
        --scratch-path "$REPO/.build-release")
fi
[ -x "$BIN" ] || die "no binary at $BIN"

# --- 3. the image -----------------------------------------------------------------------
ROOT=""
CTR=""
RUN_ROOT=""
MOUNTS=()
SERVER_PID=""
LOGFILE=""
BUILT_IMAGES=()
cleanup() {
    set +e
    if [ -n "$SERVER_PID" ]; then kill -KILL "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; fi
    local i
    for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount -l "${MOUNTS[$i]}" 2>/dev/null; done
    # Only an empty mount point is removed: never delete through a mount that is still there.
    [ -n "$RUN_ROOT" ] && rmdir "$RUN_ROOT" 2>/dev/null
    [ -n "$LOGFILE" ] && rm -f "$LOGFILE" "$LOGFILE.body"
    if [ "${KIDLEDGER_KEEP:-0}" != 1 ]; then
        if [ -n "$CTR" ]; then
            buildah umount "$CTR" >/dev/null 2>&1
            buildah rm "$CTR" >/dev/null 2>&1
        fi
        for i in "${BUILT_IMAGES[@]}"; do buildah rmi -f "$i" >/dev/null 2>&1; done
    elif [ -n "$CTR" ]; then
        log "kept: image $IMAGE, working container $CTR mounted at $ROOT"
    fi
}
trap cleanup EXIT

build_with_buildah() {
    if ! buildah inspect --type image "$BASE_IMAGE" >/dev/null 2>&1 \
        || [ "$ROOTFS/.kidledger-complete" -nt "$CACHE/base-image.stamp" ]; then
        log "importing the $SUITE root as $BASE_IMAGE"
        local c m
        c=$(buildah from scratch) || return 1
        m=$(buildah mount "$c") || { buildah rm "$c" >/dev/null; return 1; }
        cp -a "$ROOTFS/." "$m/"
        rm -f "$m/.kidledger-complete"
        buildah umount "$c" >/dev/null
        buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
            --cmd /bin/bash "$c"
        buildah commit --quiet --rm "$c" "$BASE_IMAGE" >/dev/null || { buildah rm "$c" >/dev/null 2>&1; return 1; }
        touch "$CACHE/base-image.stamp"
    fi
    log "buildah bud --isolation chroot: runtime stage of docker/Dockerfile"
    # An image left by an earlier run that was kept (KIDLEDGER_KEEP=1).
    buildah rmi -f "$IMAGE" >/dev/null 2>&1 || true
    local before_ctrs before_images rc=0
    before_ctrs=$(buildah containers -q --all | sort)
    before_images=$(buildah images -q --all --no-trunc | sort -u)
    buildah bud --isolation chroot --format docker --layers=false \
        --build-arg RUNTIME_IMAGE="$BASE_IMAGE" --build-arg BINARY_STAGE=prebuilt \
        --target runtime -f "$REPO/docker/Dockerfile" -t "$IMAGE" "$REPO" || rc=$?
    # bud leaves the working containers and images of stages it built only to copy from
    # (and everything, when it fails): remember what this build made, for cleanup.
    comm -13 <(echo "$before_ctrs") <(buildah containers -q --all | sort) | xargs -r buildah rm >/dev/null 2>&1
    mapfile -t BUILT_IMAGES < <(comm -13 <(echo "$before_images") <(buildah images -q --all --no-trunc | sort -u))
    [ "$rc" = 0 ] || return 1
    CTR=$(buildah from "$IMAGE") || return 1
    ROOT=$(buildah mount "$CTR") || return 1
}

# The Dockerfile's runtime stage, step by step, for hosts where buildah cannot run.
assemble_by_hand() {
    ROOT=$CACHE/runtime-by-hand
    log "assembling the runtime filesystem by hand in $ROOT"
    rm -rf "$ROOT"
    cp -a "$ROOTFS" "$ROOT"
    rm -f "$ROOT/.kidledger-complete"
    chroot "$ROOT" /bin/sh -ec '
        groupadd --gid 10001 kidledger
        useradd --uid 10001 --gid kidledger --home-dir /data --no-create-home \
                --shell /usr/sbin/nologin kidledger
        mkdir -p /data /app
        chown kidledger:kidledger /data'
    install -m 0755 "$BIN" "$ROOT/usr/local/bin/kidledger-server"
    cp -a "$REPO/Public" "$ROOT/app/Public"
    cp "$REPO/openapi.yaml" "$ROOT/app/openapi.yaml"
}

HOW="with buildah"
if [ "${KIDLEDGER_NO_BUILDAH:-0}" = 1 ]; then
    HOW="by hand (KIDLEDGER_NO_BUILDAH=1)"
    assemble_by_hand
elif ! build_with_buildah; then
    die "buildah could not build the runtime stage of docker/Dockerfile (output above); on a host where buildah cannot run at all, KIDLEDGER_NO_BUILDAH=1 assembles the filesystem by hand"
fi

# Image metadata as the Dockerfile declares it (buildah only).
HEALTHCHECK_CMD='exec 3<>/dev/tcp/127.0.0.1/${KIDLEDGER_PORT:-8080} && printf '"'"'GET /healthz HTTP/1.0\r\nHost: localhost\r\n\r\n'"'"' >&3 && head -n 1 <&3 | grep -q '"'"' 200 '"'"''
if [ -n "$CTR" ]; then
    cfg=$(buildah inspect --type image "$IMAGE")
    check_cfg() { # jq-expression expected-value
        local got
        got=$(jq -c "$1" <<<"$cfg")
        [ "$got" = "$2" ] || die "image config $1 is $got, expected $2"
    }
    check_cfg '.Docker.config.User' '"kidledger"'
    check_cfg '.Docker.config.WorkingDir' '"/app"'
    check_cfg '.Docker.config.Cmd' '["kidledger-server","serve"]'
    check_cfg '.Docker.config.StopSignal' '"SIGTERM"'
    check_cfg '.Docker.config.ExposedPorts | keys' '["8080/tcp"]'
    check_cfg '.Docker.config.Volumes | keys' '["/data"]'
    check_cfg '[.Docker.config.Env[] | select(startswith("KIDLEDGER_"))] | sort' \
        '["KIDLEDGER_DATA_DIR=/data","KIDLEDGER_HOST=0.0.0.0","KIDLEDGER_PORT=8080"]'
    HEALTHCHECK_CMD=$(jq -r '.Docker.config.Healthcheck.Test | if .[0] == "CMD" and .[1] == "bash" and .[2] == "-c" then .[3] else error("unexpected HEALTHCHECK") end' <<<"$cfg") \
        || die "HEALTHCHECK is not the bash probe"
    log "image config: user, workdir, cmd, stop signal, port, volume, env, healthcheck as declared"
fi

# --- 4. smoke test in the image's filesystem -------------------------------------------
for f in usr/local/bin/kidledger-server app/openapi.yaml; do
    [ -e "$ROOT/$f" ] || die "/$f missing from the image"
done
[ -d "$ROOT/app/Public" ] || die "/app/Public missing from the image"
[ "$(stat -c %u "$ROOT/data")" = 10001 ] || die "/data is not owned by kidledger (uid 10001)"

log "shared libraries of /usr/local/bin/kidledger-server in the image"
missing=$(chroot "$ROOT" ldd /usr/local/bin/kidledger-server | grep 'not found' || true)
chroot "$ROOT" ldd /usr/local/bin/kidledger-server | sed 's/^/    /' >&2
[ -z "$missing" ] || die "libraries missing from the image: $missing"

rm -rf "$ROOT/data/"* 2>/dev/null || true

# The container's view: the image read-only, /data writable, a fresh /tmp, /proc, /dev.
# The tree is private and /dev a slave of the host's, so nothing propagates back.
RUN_ROOT=$(mktemp -d /tmp/kidledger-verify-root.XXXXXX)
mount --bind "$ROOT" "$RUN_ROOT"; MOUNTS+=("$RUN_ROOT")
mount --make-private "$RUN_ROOT"
mount -o remount,bind,ro "$RUN_ROOT"
mount --bind "$ROOT/data" "$RUN_ROOT/data"; MOUNTS+=("$RUN_ROOT/data")
mount -t tmpfs -o mode=1777,size=64m tmpfs "$RUN_ROOT/tmp"; MOUNTS+=("$RUN_ROOT/tmp")
mount -t proc proc "$RUN_ROOT/proc"; MOUNTS+=("$RUN_ROOT/proc")
mount --rbind /dev "$RUN_ROOT/dev"; MOUNTS+=("$RUN_ROOT/dev")
mount --make-rslave "$RUN_ROOT/dev"
touch "$RUN_ROOT/app/.write-test" 2>/dev/null && die "the image root is writable in the test chroot"

LOGFILE=$(mktemp /tmp/kidledger-verify.XXXXXX)
# Port 0: the server picks a free loopback port and reports it in its listening line.
IMAGE_ENV=(env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/data
           KIDLEDGER_HOST=127.0.0.1 KIDLEDGER_DATA_DIR=/data)
log "starting kidledger-server serve in the image as kidledger on 127.0.0.1"
chroot --userspec=10001:10001 "$RUN_ROOT" "${IMAGE_ENV[@]}" KIDLEDGER_PORT=0 \
    /bin/sh -c 'cd /app && exec kidledger-server serve' >"$LOGFILE" 2>&1 &
SERVER_PID=$!

for _ in $(seq 1 150); do
    grep -q '"event":"listening"' "$LOGFILE" && break
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$LOGFILE" >&2; die "the server exited before listening"; }
    sleep 0.2
done
grep -q '"event":"listening"' "$LOGFILE" || { cat "$LOGFILE" >&2; die "no listening line within 30 s"; }
PORT=$(grep -m 1 '"event":"listening"' "$LOGFILE" | jq -er '.port') || die "no port in the listening line"
log "listening on 127.0.0.1:$PORT"
BASE=http://127.0.0.1:$PORT

expect() { # name expected-status curl-args...
    local name=$1 want=$2; shift 2
    local got
    got=$(curl -sS -m 10 -o "$LOGFILE.body" -w '%{http_code}' "$@") || die "$name: curl failed"
    [ "$got" = "$want" ] || { cat "$LOGFILE.body" >&2; echo >&2; die "$name: HTTP $got, expected $want"; }
    log "$name: $got"
}
expect "GET /healthz" 200 "$BASE/healthz"
expect "GET /readyz" 200 "$BASE/readyz"
expect "GET /openapi.yaml (served from /app)" 200 "$BASE/openapi.yaml"
grep -q '^openapi: 3.1' "$LOGFILE.body" || die "/openapi.yaml is not the spec"
handle="verify-$(date +%s)"
expect "POST /v1/accounts" 201 -X POST "$BASE/v1/accounts" -H 'Content-Type: application/json' \
    -d "{\"handle\":\"$handle\",\"displayName\":\"Image check\",\"deviceName\":\"verify\"}"
secret=$(jq -er '.token.secret' "$LOGFILE.body") || die "no token.secret in the answer"
expect "GET /v1/me" 200 -H "Authorization: Bearer $secret" "$BASE/v1/me"
[ "$(jq -r '.account.handle' "$LOGFILE.body")" = "$handle" ] || die "GET /v1/me answered another account"
expect "GET /v1/me without a token" 401 "$BASE/v1/me"

log "HEALTHCHECK command inside the image"
chroot --userspec=10001:10001 "$RUN_ROOT" "${IMAGE_ENV[@]}" KIDLEDGER_PORT="$PORT" \
    bash -c "$HEALTHCHECK_CMD" || die "the HEALTHCHECK command failed"

log "SIGTERM"
kill -TERM "$SERVER_PID"
status=0
for _ in $(seq 1 150); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.2; done
kill -0 "$SERVER_PID" 2>/dev/null && die "still running 30 s after SIGTERM"
wait "$SERVER_PID" || status=$?
SERVER_PID=""
[ "$status" = 0 ] || { cat "$LOGFILE" >&2; die "exit status $status after SIGTERM, expected 0"; }
grep -q '"event":"stopped"' "$LOGFILE" || { cat "$LOGFILE" >&2; die "no stopped line after SIGTERM"; }
[ -s "$ROOT/data/kidledger.sqlite" ] || die "no /data/kidledger.sqlite after the run"

log "verified: image built $HOW; server in it served, authenticated, passed its health check and exited 0 on SIGTERM"
