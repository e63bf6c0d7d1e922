#!/usr/bin/env bash
# usage: deploy/engine.sh COMMAND [ARG...]   (what `make compose-test` runs)
#
# Finds a container engine and a compose CLI, builds the image from this
# machine's binaries (Dockerfile.prebuilt: nothing is pulled), and runs
# COMMAND with SWITCHBOARD_ENGINE (docker or podman), SWITCHBOARD_COMPOSE
# (the compose command line) and, for podman, DOCKER_HOST set.
#
# A working Docker engine is used as it is, and so is a podman that runs
# containers: no system file is changed. Where neither works, as root (a CI
# machine), podman and runc are installed with apt and podman is given the
# settings this kind of VM needs (docs/deploy.md, Without a registry).
# Podman is driven through its Docker API socket by Docker's compose CLI:
# the system's own `docker compose` when it has one, else bin/docker-compose
# built from tools/compose.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
say() { echo "engine.sh: $*" >&2; }

# The settings without which podman cannot start a container in a VM that
# forbids raising RLIMIT_NPROC and RLIMIT_NOFILE and mounts cgroups v1 and v2
# side by side (crun refuses that layout; runc takes it).
podman_conf=/etc/containers/containers.conf.d/50-switchboard-ci.conf
write_podman_conf() {
	say "writing $podman_conf: runc, cgroupfs, no default ulimits, no pids limit"
	mkdir -p "$(dirname "$podman_conf")"
	cat >"$podman_conf" <<-'EOF'
		# Written by switchboard's deploy/engine.sh (make compose-test).
		[containers]
		default_ulimits = []
		pids_limit = 0

		[engine]
		runtime = "runc"
		cgroup_manager = "cgroupfs"
	EOF
}

# apt_install PACKAGE...: as root on a Debian machine; elsewhere it says
# what to install and stops.
apt_install() {
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
		say "no working container engine: install Docker (with its compose plugin) or podman and runc, or run this as root on a Debian machine to have them installed"
		exit 1
	fi
	say "no working container engine: installing $* with apt"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# runs: can ENGINE start a container of the image just built?
runs() { "$1" run --rm "$SWITCHBOARD_IMAGE" help >/dev/null 2>&1; }

export SWITCHBOARD_IMAGE=${SWITCHBOARD_IMAGE:-switchboard:dev}
if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
	engine=docker
else
	engine=podman
	command -v podman >/dev/null || apt_install podman runc
fi
make -s images-prebuilt ENGINE="$engine"
if ! runs "$engine"; then
	if [ "$engine" = podman ] && [ "$(id -u)" = 0 ] && [ ! -e "$podman_conf" ]; then
		command -v runc >/dev/null || apt_install runc
		write_podman_conf
	fi
	if ! runs "$engine"; then
		say "$engine cannot start a container of $SWITCHBOARD_IMAGE:"
		"$engine" run --rm "$SWITCHBOARD_IMAGE" help >/dev/null || true
		exit 1
	fi
fi
export SWITCHBOARD_ENGINE=$engine

if [ "$engine" = podman ]; then
	# Docker's compose CLI reaches podman through its Docker API socket,
	# served for as long as COMMAND runs (its log: bin/podman-service.log).
	dir=$(mktemp -d)
	podman system service --time=0 "unix://$dir/podman.sock" 2>"$root/bin/podman-service.log" &
	service=$!
	trap 'kill $service; wait $service 2>/dev/null; rm -rf "$dir"' EXIT
	trap 'exit 130' INT TERM # through the EXIT trap: the service stops too
	export DOCKER_HOST=unix://$dir/podman.sock
	for _ in $(seq 100); do [ -S "$dir/podman.sock" ] && break; sleep 0.1; done
fi
if command -v docker >/dev/null && docker compose version >/dev/null 2>&1; then
	export SWITCHBOARD_COMPOSE="docker compose"
else
	make -s compose-cli
	export SWITCHBOARD_COMPOSE=$root/bin/docker-compose
fi
say "engine $engine ($("$engine" --version)), compose: $SWITCHBOARD_COMPOSE ($($SWITCHBOARD_COMPOSE version --short))"
"$@"
