# shellcheck shell=bash
#
# scripts/deps.sh — shared logic for scripts/demo, scripts/test and .ci/run.
#
# Sourced, never executed. It provides two entry points:
#
#   hilock_deps_ensure     make sure the tools and libraries hilock needs are
#                          installed; on Debian/Ubuntu install what is missing
#                          (as root) or print the one apt-get line to run.
#   hilock_build [-Dk=v]   configure the build directory if needed (or
#                          change its options in place when the given -D
#                          options differ from its current ones), then
#                          compile. An existing build directory is never
#                          wiped.
#
# Knobs (environment):
#   HILOCK_BUILD_DIR   build directory, relative to the repository root
#                      (default: build)
#   HILOCK_SETUP_ARGS  extra -D options for `meson setup` (and `meson
#                      configure` on an existing directory), split on spaces,
#                      e.g. "-Db_sanitize=address,undefined -Db_lundef=false"
#   HILOCK_SKIP_DEPS=1 skip the dependency check entirely (you manage the
#                      toolchain yourself, or rely on the subprojects/ wraps)
#
# Every step prints one short line on success; on failure the captured tool
# output is shown and the caller exits non-zero (the scripts run under
# `set -euo pipefail`).

# Debian packages the build, the tests and the demo need. A C compiler is
# checked separately (any `cc` will do; gcc is installed when there is none).
HILOCK_DEB_PACKAGES=(
	libc6-dev
	pkg-config
	meson
	ninja-build
	libhiredis-dev
	libevent-dev
	check
	redis-server
	redis-tools    # redis-cli: creates the test and demo clusters
	man-db         # man -l: the man page test renders docs/hilock.1
)

# pkg-config modules looked for on machines without dpkg; meson falls back to
# the wraps in subprojects/ for any of these that is missing.
HILOCK_PC_MODULES=(hiredis libevent check)

hilock_say() {
	printf 'hilock: %s\n' "$*"
}

hilock_err() {
	printf 'hilock: %s\n' "$*" >&2
}

# hilock_root — print the absolute path of the repository root (the parent
# of the directory holding this file).
hilock_root() {
	local here
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	dirname "$here"
}

# hilock_run_logged LABEL CMD... — run CMD with its output captured; on
# failure print the captured output (last 200 lines) and return its status.
hilock_run_logged() {
	local label=$1 log rc=0
	shift
	log=$(mktemp "${TMPDIR:-/tmp}/hilock-XXXXXX.log")
	"$@" >"$log" 2>&1 || rc=$?
	if ((rc != 0)); then
		hilock_err "$label failed (exit $rc): $*"
		tail -n 200 "$log" >&2
		rm -f "$log"
		return "$rc"
	fi
	rm -f "$log"
}

# hilock_deb_installed PKG — true when dpkg knows PKG as installed.
hilock_deb_installed() {
	dpkg-query -W -f='${db:Status-Status}\n' "$1" 2>/dev/null | grep -qx installed
}

# hilock_deb_missing PKG... — print the packages among PKG... that are not
# installed, one per line (nothing when all are).
hilock_deb_missing() {
	local pkg
	for pkg in "$@"; do
		hilock_deb_installed "$pkg" || printf '%s\n' "$pkg"
	done
}

# hilock_have_cc — true when some C compiler is on PATH.
hilock_have_cc() {
	command -v "${CC:-cc}" >/dev/null 2>&1 ||
		command -v gcc >/dev/null 2>&1 ||
		command -v clang >/dev/null 2>&1
}

# hilock_apt_install PKG... — as root: apt-get update, then install PKG...
# without recommends. Package maintainer scripts should not start services:
# redis-server's postinst runs `invoke-rc.d redis-server start || exit 1`.
# Where no init system can be found (a bare container) bookworm's
# invoke-rc.d already refuses, but on a machine running sysvinit it would
# start a system redis on port 6379 — and fail the whole install if that
# port is taken. So when no policy-rc.d exists and systemd is not running, a
# temporary one that denies service starts (exit 101) is in place for the
# duration of the install. An existing policy-rc.d is left alone; the tests
# and the demo start their own redis-server and need no system one.
hilock_apt_install() {
	local policy=/usr/sbin/policy-rc.d marker='# hilock temporary policy-rc.d'
	local added=0 rc=0
	if [[ ! -e $policy && ! -d /run/systemd/system ]]; then
		printf '#!/bin/sh\n%s: deny service starts during install\nexit 101\n' \
			"$marker" >"$policy"
		chmod 755 "$policy"
		added=1
	fi
	hilock_say "apt-get update"
	hilock_run_logged "apt-get update" \
		apt-get -q -o DPkg::Lock::Timeout=300 update || rc=$?
	if ((rc == 0)); then
		hilock_say "apt-get install $*"
		hilock_run_logged "apt-get install" \
			env DEBIAN_FRONTEND=noninteractive \
			apt-get -q -y -o DPkg::Lock::Timeout=300 \
			install --no-install-recommends "$@" || rc=$?
	fi
	if ((added)) && grep -qF "$marker" "$policy" 2>/dev/null; then
		rm -f "$policy"
	fi
	return "$rc"
}

# hilock_deps_debian — the dpkg path of hilock_deps_ensure.
hilock_deps_debian() {
	local -a missing=()
	local pkg
	while IFS= read -r pkg; do
		missing+=("$pkg")
	done < <(hilock_deb_missing "${HILOCK_DEB_PACKAGES[@]}")
	if ! hilock_have_cc && ! hilock_deb_installed gcc; then
		missing=(gcc "${missing[@]}")
	fi
	if ((${#missing[@]} == 0)); then
		hilock_say "dependencies: all installed"
		return 0
	fi
	if ((EUID != 0)); then
		hilock_err "missing Debian packages: ${missing[*]}"
		hilock_err "install them with:"
		printf '  sudo apt-get install %s\n' "${missing[*]}" >&2
		return 1
	fi
	hilock_say "dependencies: installing ${missing[*]}"
	hilock_apt_install "${missing[@]}"
	local -a still=()
	while IFS= read -r pkg; do
		still+=("$pkg")
	done < <(hilock_deb_missing "${missing[@]}")
	if ((${#still[@]} != 0)); then
		hilock_err "still not installed after apt-get: ${still[*]}"
		return 1
	fi
}

# hilock_deps_other — the path for machines without dpkg: check for the
# commands and pkg-config modules, and say what is missing. Missing tools are
# fatal; missing libraries are not, because meson then builds them from the
# wraps in subprojects/ (which needs network access the first time).
hilock_deps_other() {
	local -a tools=() libs=()
	local cmd mod pc=""
	hilock_have_cc || tools+=("a C compiler (cc)")
	command -v meson >/dev/null 2>&1 || tools+=("meson (>= 0.63)")
	command -v ninja >/dev/null 2>&1 || command -v samu >/dev/null 2>&1 ||
		tools+=("ninja")
	command -v redis-server >/dev/null 2>&1 || tools+=("redis-server")
	for cmd in pkg-config pkgconf; do
		if command -v "$cmd" >/dev/null 2>&1; then
			pc=$cmd
			break
		fi
	done
	for mod in "${HILOCK_PC_MODULES[@]}"; do
		if [[ -z $pc ]] || ! "$pc" --exists "$mod" 2>/dev/null; then
			libs+=("$mod")
		fi
	done
	if ((${#libs[@]} != 0)); then
		hilock_say "not found by pkg-config: ${libs[*]}"
		hilock_say "meson will build them from the wraps in subprojects/" \
			"(downloads their sources once; needs network)"
	fi
	if ((${#tools[@]} != 0)); then
		hilock_err "no dpkg here, and these are missing:"
		printf '  %s\n' "${tools[@]}" >&2
		hilock_err "install them with your package manager and run again"
		return 1
	fi
	hilock_say "dependencies: tools present"
}

# hilock_deps_ensure — see the header. Returns non-zero when something is
# missing and could not be installed.
hilock_deps_ensure() {
	if [[ ${HILOCK_SKIP_DEPS:-0} == 1 ]]; then
		hilock_say "dependencies: check skipped (HILOCK_SKIP_DEPS=1)"
		return 0
	fi
	if command -v dpkg-query >/dev/null 2>&1; then
		hilock_deps_debian
	else
		hilock_deps_other
	fi
}

# hilock_options_match DIR -Dk=v... — true when every given -Dk=v option
# already has value v in the configured build directory DIR. Arguments that
# are not -D options are ignored (they cannot be compared).
hilock_options_match() {
	local dir=$1
	shift
	meson introspect --buildoptions "$dir" 2>/dev/null | python3 -c '
import json, sys
current = {o["name"]: o["value"] for o in json.load(sys.stdin)}
def norm(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return ",".join(str(x) for x in v)
    return str(v)
for arg in sys.argv[1:]:
    if not arg.startswith("-D") or "=" not in arg:
        continue
    key, _, want = arg[2:].partition("=")
    if key not in current or norm(current[key]) != want.strip("[]\x27\""):
        sys.exit(1)
' "$@"
}

# hilock_build [SETUP-ARG...] — configure (if needed) and compile the build
# directory HILOCK_BUILD_DIR (default build/) under the repository root.
# SETUP-ARG and HILOCK_SETUP_ARGS (-D options) are passed to `meson setup`.
# An existing, configured build directory is reused; `meson configure`
# changes it in place (never wiped) when a requested -D option differs from
# its current value.
hilock_build() {
	local root dir
	local -a args=("$@") extra=()
	root=$(hilock_root)
	dir=${HILOCK_BUILD_DIR:-build}
	if [[ -n ${HILOCK_SETUP_ARGS:-} ]]; then
		read -r -a extra <<<"$HILOCK_SETUP_ARGS"
		args+=("${extra[@]}")
	fi
	cd "$root" || return
	if [[ ! -f $dir/meson-private/coredata.dat ]]; then
		hilock_say "configuring $dir/"
		hilock_run_logged "meson setup" meson setup "$dir" "${args[@]}"
	elif ((${#args[@]} != 0)) && ! hilock_options_match "$dir" "${args[@]}"; then
		# `meson configure`, not `meson setup --reconfigure`: the latter
		# records base options such as b_sanitize but does not apply them
		# (mesonbuild/meson#11732). The compile step regenerates.
		hilock_say "reconfiguring $dir/ (${args[*]})"
		if ! meson configure "$dir" "${args[@]}" >/dev/null 2>&1; then
			# An option whose type changed since the directory was
			# configured (tests: boolean, then feature) is refused until
			# meson has read meson_options.txt again: regenerate with
			# the new values, then apply them once more as above.
			hilock_say "regenerating $dir/ first"
			hilock_run_logged "meson setup --reconfigure" \
				meson setup --reconfigure "$dir" "${args[@]}"
			hilock_run_logged "meson configure" \
				meson configure "$dir" "${args[@]}"
		fi
	fi
	hilock_say "compiling $dir/"
	hilock_run_logged "meson compile" meson compile -C "$dir"
}
