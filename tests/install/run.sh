#!/usr/bin/env bash
#
# tests/install/run.sh MESON BUILD_DIR SOURCE_ROOT — the install test.
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
#   - the staged `hilock` command runs (--help, --version) without
#     LD_LIBRARY_PATH (its RPATH is relative to it), and its man page is
#     installed;
#   - a newcomer's path: SOURCE_ROOT configured afresh with the default
#     options on a machine without Check (pkg-config cannot see it, no
#     download allowed) and a prefix of its own, compiled, installed
#     (`meson install`, no DESTDIR), the suites left out; examples/hello.c built out of tree with nothing but
#     `pkg-config --cflags --libs hilock libevent` (PKG_CONFIG_PATH to the
#     prefix) and run against a throwaway redis-server (with-redis.sh): it
#     takes and releases a lock; the installed hilock runs with no
#     environment at all.
# Exits 0 on success, 1 with the reason on stderr. Uses its own temporary
# directory only, so it runs in parallel with any other test.
set -euo pipefail

if (($# != 3)); then
	echo "usage: $0 MESON BUILD_DIR SOURCE_ROOT" >&2
	exit 2
fi
meson=$1
build=$(cd "$2" && pwd)
source_root=$(cd "$3" && pwd)
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

s_data=$stage$(abs "$("$meson" introspect --buildoptions "$build" |
	python3 -c 'import json, sys
print({x["name"]: x["value"] for x in json.load(sys.stdin)}["mandir"])')")
for f in "$s_inc/hilock/hilock.h" "$s_lib/libhilock.so" \
	"$s_lib/pkgconfig/hilock.pc" "$s_bin/hilock" "$s_data/man1/hilock.1"; do
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

out=$(LD_LIBRARY_PATH=$s_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
	"$tmp/hello") || fail "hello exited $?: $out"
[[ ${out%%$'\n'*} == "lock is held by another owner" ]] ||
	fail "hello printed: $out"
lib=$(LD_LIBRARY_PATH=$s_lib ldd "$tmp/hello" |
	awk '$1 ~ /^libhilock\.so/ { print $3 }')
[[ $lib == "$s_lib"/* ]] || fail "hello loaded libhilock from '$lib'"

# The staged command finds the staged library by its RPATH, with no
# LD_LIBRARY_PATH (meson test sets one to the build tree); in /usr there is
# none, the system's library path is the one that counts there.
if [[ $prefix != /usr ]]; then
	unset LD_LIBRARY_PATH
else
	export LD_LIBRARY_PATH=$s_lib
fi
"$s_bin/hilock" --help >"$tmp/help.txt" || fail "hilock --help exited $?"
grep -q 'exit status' "$tmp/help.txt" || fail "hilock --help has no exit codes"
ver=$("$s_bin/hilock" --version) || fail "hilock --version exited $?"
lib=$(ldd "$s_bin/hilock" | awk '$1 ~ /^libhilock\.so/ { print $3 }')
lib=$(realpath -m "$lib")
[[ $lib == "$s_lib"/* ]] || fail "hilock loaded libhilock from '$lib'"

printf 'install test: staged under %s: %s; %s; %s\n' "$prefix" \
	"${out%%$'\n'*}" "${out#*$'\n'}" "$ver"

# ---- a newcomer's path: a fresh prefix, hello.c from outside the tree ----
# shellcheck source=tests/with-redis.sh
source "$here/../with-redis.sh"
fresh=$tmp/fresh
# A machine without Check: pkg-config sees every module here but check
# (PKG_CONFIG_LIBDIR), nothing may be downloaded, and -Dtests is left at
# its default: the suites must simply be left out.
mkdir "$tmp/pc"
IFS=: read -r -a pc_dirs <<<"$(pkg-config --variable pc_path pkg-config)"
for d in "${pc_dirs[@]}" ${PKG_CONFIG_PATH:+${PKG_CONFIG_PATH//:/ }}; do
	[[ -d $d ]] || continue
	find "$d" -maxdepth 1 -name '*.pc' ! -name check.pc \
		-exec cp -n -t "$tmp/pc" {} +
done
start=$(date +%s.%N)
PKG_CONFIG_LIBDIR=$tmp/pc "$meson" setup "$fresh/build" "$source_root" \
	--prefix="$fresh/prefix" --wrap-mode=nodownload \
	>"$tmp/fresh.log" 2>&1 &&
	"$meson" compile -C "$fresh/build" >>"$tmp/fresh.log" 2>&1 &&
	"$meson" install -C "$fresh/build" >>"$tmp/fresh.log" 2>&1 || {
	tail -n 60 "$tmp/fresh.log" >&2
	fail "meson setup/compile/install without Check into a fresh prefix failed"
}
built=$(date +%s.%N)
grep -q 'Run-time dependency check found: NO' "$tmp/fresh.log" ||
	fail "the fresh build found Check although pkg-config could not see it"
[[ ! -e $fresh/build/tests/test_lock ]] ||
	fail "the fresh build without Check built the test suites"
f_lib=$(find "$fresh/prefix" -name hilock.pc -printf '%h\n' -quit)
[[ -n $f_lib ]] || fail "no hilock.pc under the fresh prefix"
mkdir "$tmp/outside"
cp "$source_root/examples/hello.c" "$tmp/outside/"
(
	cd "$tmp/outside"
	export PKG_CONFIG_PATH=$f_lib
	# shellcheck disable=SC2046 # pkg-config output is meant to be split
	"${CC:-cc}" -std=c11 -Wall -o hello hello.c \
		$(pkg-config --cflags --libs hilock libevent) \
		-Wl,-rpath,"$(pkg-config --variable=libdir hilock)"
) >"$tmp/outside/cc.log" 2>&1 || {
	cat "$tmp/outside/cc.log" >&2
	fail "examples/hello.c does not build with pkg-config hilock from the prefix"
}
[[ ! -s $tmp/outside/cc.log ]] || {
	cat "$tmp/outside/cc.log" >&2
	fail "examples/hello.c builds with warnings (-Wall)"
}
out=$(env -u LD_LIBRARY_PATH bash -c "source '$here/../with-redis.sh'
	with_redis '$tmp/outside/hello'" 2>&1) || fail "hello exited $?: $out"
[[ $out == *'released: success'* ]] || fail "hello printed: $out"
done_at=$(date +%s.%N)
ver=$(env -i "$fresh/prefix/bin/hilock" --version) ||
	fail "the fresh prefix's hilock does not run without an environment"
command -v man >/dev/null ||
	fail "no man command: install man-db (scripts/deps.sh lists it)"
man -l "$fresh/prefix/share/man/man1/hilock.1" >/dev/null 2>&1 ||
	fail "the installed man page does not render"
awk -v a="$start" -v b="$built" -v c="$done_at" -v out="${out//$'\n'/ | }" \
	-v ver="$ver" 'BEGIN { printf "install test: fresh prefix: " \
	"setup+compile+install %.1f s, hello built and run %.1f s: %s; %s\n",
	b - a, c - b, out, ver }'
