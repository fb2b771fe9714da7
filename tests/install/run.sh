#!/usr/bin/env bash
#
# tests/install/run.sh MESON BUILD_DIR — the install test.
#
# Installs BUILD_DIR with `MESON install --destdir` into a scratch directory
# (nothing outside it is touched), then checks what an outside user gets:
#   - hilock/hilock.h, libhilock.so* and hilock.pc under the staged prefix;
#   - a tiny program (hello.c, next to this script, a libevent user) compiled
#     and linked with only `pkg-config --cflags --libs hilock` (also with a
#     hiredis in a prefix of its own: configure the build with
#     PKG_CONFIG_PATH=PREFIX/lib/pkgconfig) — PKG_CONFIG_PATH pointing
#     into the stage and the .pc file's prefix overridden with
#     --define-variable, since it names the real prefix — runs and prints
#     hilock_strerror(HILOCK_EBUSY), loading the staged libhilock;
#   - the staged `hilock` command runs (--help, --version).
# Exits 0 on success, 1 with the reason on stderr. Uses its own temporary
# directory only, so it runs in parallel with any other test.
set -euo pipefail

if (($# != 2)); then
	echo "usage: $0 MESON BUILD_DIR" >&2
	exit 2
fi
meson=$1
build=$(cd "$2" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hilock-install-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

fail() {
	printf 'install test: %s\n' "$*" >&2
	exit 1
}

# The options that say where things go, and the sanitizers to link with.
read -r prefix libdir bindir includedir sanitize < <(
	"$meson" introspect --buildoptions "$build" | python3 -c '
import json, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
s = o.get("b_sanitize", "none")
s = ",".join(s) if isinstance(s, list) else s
print(o["prefix"], o["libdir"], o["bindir"], o["includedir"], s or "none")
')
# Relative directories are relative to the prefix.
abs() { case $1 in /*) printf '%s' "$1" ;; *) printf '%s/%s' "$prefix" "$1" ;; esac; }
stage=$tmp/dest
s_lib=$stage$(abs "$libdir")
s_bin=$stage$(abs "$bindir")
s_inc=$stage$(abs "$includedir")

"$meson" install -C "$build" --no-rebuild --destdir "$stage" \
	>"$tmp/install.log" 2>&1 || {
	cat "$tmp/install.log" >&2
	fail "meson install failed"
}

for f in "$s_inc/hilock/hilock.h" "$s_lib/libhilock.so" \
	"$s_lib/pkgconfig/hilock.pc" "$s_bin/hilock"; do
	[[ -e $f ]] || fail "not installed: ${f#"$stage"}"
done

export PKG_CONFIG_PATH=$s_lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
pc_prefix=$(pkg-config --variable=prefix hilock)
[[ $pc_prefix == "$prefix" ]] ||
	fail "hilock.pc says prefix=$pc_prefix, the build says $prefix"
# shellcheck disable=SC2207 # pkg-config output is meant to be word-split
flags=($(pkg-config --define-variable=prefix="$stage$prefix" \
	--cflags --libs hilock))
[[ " ${flags[*]} " == *" -I$s_inc "* && " ${flags[*]} " == *" -L$s_lib "* ]] ||
	fail "pkg-config hilock does not point into the stage: ${flags[*]}"
# hello.c calls libevent itself: hilock.pc requires it (the API takes an
# event_base), so its flags come with hilock's. hiredis, private, is found
# through libhilock (its run path names a hiredis outside the system's
# directories), as it is when the program runs.
san=()
[[ $sanitize == none ]] || san=(-fsanitize="$sanitize")

"${CC:-cc}" -std=c11 -Wall -Wextra -Werror "${san[@]}" \
	"$here/hello.c" -o "$tmp/hello" "${flags[@]}" ||
	fail "hello.c does not build against the staged install"

export LD_LIBRARY_PATH=$s_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
out=$("$tmp/hello") || fail "hello exited $?: $out"
[[ ${out%%$'\n'*} == "lock is held by another owner" ]] ||
	fail "hello printed: $out"
lib=$(ldd "$tmp/hello" | awk '$1 ~ /^libhilock\.so/ { print $3 }')
[[ $lib == "$s_lib"/* ]] || fail "hello loaded libhilock from '$lib'"

"$s_bin/hilock" --help >"$tmp/help.txt" || fail "hilock --help exited $?"
grep -q 'exit status' "$tmp/help.txt" || fail "hilock --help has no exit codes"
ver=$("$s_bin/hilock" --version) || fail "hilock --version exited $?"
lib=$(ldd "$s_bin/hilock" | awk '$1 ~ /^libhilock\.so/ { print $3 }')
[[ $lib == "$s_lib"/* ]] || fail "hilock loaded libhilock from '$lib'"

printf 'install test: staged under %s: %s; %s; %s\n' "$prefix" \
	"${out%%$'\n'*}" "${out#*$'\n'}" "$ver"
