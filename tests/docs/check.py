#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""tests/docs/check.py -- the checks of the documentation.

  check.py man HILOCK PAGE
      PAGE (docs/hilock.1) renders with `man -l` without a warning, and
      names exactly the options `HILOCK --help` names: those of the help's
      usage block (up to its first blank line) and of its option lines
      against those of the page's SYNOPSIS and its .TP item headers.

  check.py blocks CC BUILD_DIR SOURCE_ROOT FILE.md|DIR...
      Every ```c block of each FILE.md (a DIR: its *.md) compiles (CC, C11, -Wall -Wextra
      -Werror, against include/ and libevent's headers) and links against
      the built libhilock (BUILD_DIR/src) and libevent. A block whose info
      string is `c fragment` is statements or declarations, not a program:
      it is built inside a function body that has `base` (a struct
      event_base *), `client` (a struct hilock_client *), `lock` (a
      struct hilock_lock *) and `opts` (a struct hilock_options, filled by
      hilock_options_init) in scope, and the callbacks `on_done` (a
      hilock_lock_cb), `on_multi_done`, `on_sem_done` and `on_permit_done` (a
      hilock_multi_cb, hilock_semaphore_cb, hilock_permit_cb); `c decl`
      blocks are top-level declarations, built with an empty main. Other
      languages are skipped. A block that names a file of examples/ in its
      opening comment ("/* hello.c -- ...") must be that file, whole.
      The README may not grow past README_MAX bytes.

Exits 0 when every check passes, 1 with the reasons on stderr.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

# The README is a front door: what hilock is, a program, install, a map.
README_MAX = 16 * 1024

OPT = re.compile(r"(?:^|(?<=[\s\[|(,/]))(--?[A-Za-z][A-Za-z-]*)")
ROFF_OPT = re.compile(r"\\-(\\-)?([A-Za-z](?:[A-Za-z]|\\-)*)")


def help_options(text):
    """The options of `hilock --help`: its usage block and option lines."""
    opts = set()
    lines = text.splitlines()
    block_end = lines.index("") if "" in lines else len(lines)
    for i, line in enumerate(lines):
        if i < block_end:
            opts.update(OPT.findall(line))
        else:
            m = re.match(r"\s+(--?[A-Za-z][A-Za-z-]*)", line)
            if m:
                opts.add(m.group(1))
    return opts


def roff_options(line):
    out = set()
    for m in ROFF_OPT.finditer(line):
        name = m.group(2).replace("\\-", "-").rstrip("-")
        out.add(("--" if m.group(1) else "-") + name)
    return out


def man_options(page):
    """The options of the page's SYNOPSIS and of its .TP headers."""
    opts = set()
    section = ""
    after_tp = False
    for line in page.splitlines():
        if line.startswith(".SH"):
            section = line[3:].strip().strip('"')
        if section == "SYNOPSIS" or after_tp:
            opts |= roff_options(line)
        after_tp = line.startswith(".TP")
    return opts


def check_man(hilock, page_path):
    errors = []
    help_text = subprocess.run([hilock, "--help"], capture_output=True,
                               text=True, check=True).stdout
    with open(page_path, encoding="utf-8") as f:
        page = f.read()
    in_help, in_man = help_options(help_text), man_options(page)
    if not in_help:
        errors.append("no option found in hilock --help")
    for o in sorted(in_help - in_man):
        errors.append(f"hilock --help has {o}, {page_path} does not")
    for o in sorted(in_man - in_help):
        errors.append(f"{page_path} has {o}, hilock --help does not")
    env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8", MAN_DISABLE_SECCOMP="1")
    if not shutil.which("man"):
        errors.append("no man command: install man-db (scripts/deps.sh "
                      "lists it) to check that the page renders")
        return errors
    r = subprocess.run(["man", "--warnings", "-l", page_path],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0 or r.stderr.strip():
        errors.append(f"man -l {page_path}: exit {r.returncode}: {r.stderr.strip()}")
    for heading in ("NAME", "SYNOPSIS", "OPTIONS", "EXIT STATUS"):
        if not re.search(rf"^{heading}$", r.stdout, re.M):
            errors.append(f"man -l {page_path}: no {heading} section rendered")
    if not errors:
        print(f"man: {len(in_help)} options in both; {page_path} renders")
    return errors


# A callback of each handle type that does nothing, by the names the
# fragments may use.
NOOP_CALLBACKS = "".join(
    "static void %s(struct hilock_%s *h, int status,\n"
    "               const struct hilock_result *res, void *arg)\n"
    "{\n    (void)h, (void)status, (void)res, (void)arg;\n}\n\n" % cb
    for cb in (("on_done", "lock"), ("on_multi_done", "multi"),
               ("on_sem_done", "semaphore"), ("on_permit_done", "permit")))

FRAGMENT_FRAME = """\
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>
#include <hilock/hilock.h>

""" + NOOP_CALLBACKS + """void frame(struct event_base *base, struct hilock_client *client,
           struct hilock_lock *lock);
void frame(struct event_base *base, struct hilock_client *client,
           struct hilock_lock *lock)
{
    struct hilock_options opts;
    hilock_options_init(&opts);
    (void)base, (void)client, (void)lock, (void)on_done, (void)on_multi_done;
    (void)on_sem_done, (void)on_permit_done;
#line %d "%s"
%s
}

int main(void) { return 0; }
"""

DECL_FRAME = """\
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>
#include <hilock/hilock.h>
#line %d "%s"
%s

int main(void) { return 0; }
"""


def c_blocks(path):
    """(first line number, info string, text) of each ```c block."""
    blocks = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^```\s*(c(?:\s+\w+)?)\s*$", lines[i])
        if m:
            start = i + 1
            j = start
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            blocks.append((start + 1, m.group(1).split(), "\n".join(lines[start:j])))
            i = j
        i += 1
    return blocks


def copy_name(text):
    """The examples/ file a block says it is ("/* hello.c -- ..." on one of
    its first two lines), or None."""
    for first in text.split("\n")[:2]:
        m = re.match(r"/\* (\w+\.c) -- ", first)
        if m:
            return m.group(1)
    return None


def shown_example(root, text):
    """The text of examples/NAME when the block names one, else None."""
    name = copy_name(text)
    path = os.path.join(root, "examples", name) if name else None
    if not path or not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return f.read().strip("\n")


def check_blocks(cc, build, root, files):
    errors = []
    n = 0
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libevent"],
                           capture_output=True, text=True, check=True).stdout.split()
    with tempfile.TemporaryDirectory(prefix="hilock-docs-") as tmp:
        for path in files:
            rel = os.path.relpath(path, root)
            for line, info, text in c_blocks(path):
                kind = info[1] if len(info) > 1 else "program"
                if kind == "fragment":
                    src = FRAGMENT_FRAME % (line, rel, text)
                elif kind == "decl":
                    src = DECL_FRAME % (line, rel, text)
                elif kind == "program":
                    src = '#line %d "%s"\n%s\n' % (line, rel, text)
                else:
                    errors.append(f"{rel}:{line}: unknown block kind '{kind}'")
                    continue
                copy = shown_example(root, text)
                if copy and copy != text.strip("\n"):
                    errors.append(f"{rel}:{line}: the block differs from "
                                  f"examples/{copy_name(text)}: show it whole")
                n += 1
                c = os.path.join(tmp, f"block{n}.c")
                with open(c, "w", encoding="utf-8") as f:
                    f.write(src)
                cmd = [cc, "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-Wall",
                       "-Wextra", "-Werror", "-Wno-unused-parameter",
                       "-Wno-unused-variable", "-Wno-unused-function",
                       "-I", os.path.join(root, "include"), c,
                       "-o", os.path.join(tmp, f"block{n}"),
                       "-L", os.path.join(build, "src"), "-lhilock"] + flags
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0:
                    errors.append(f"{rel}:{line}: the ```{' '.join(info)} block "
                                  f"does not build:\n{r.stderr}")
    for path in files:
        if os.path.abspath(path) == os.path.join(os.path.abspath(root),
                                                 "README.md"):
            size = os.path.getsize(path)
            if size > README_MAX:
                errors.append(f"README.md is {size} bytes, over {README_MAX}: "
                              "it is the front door; move the reference "
                              "into docs/")
    if n == 0:
        errors.append("no ```c block found")
    if not errors:
        print(f"blocks: {n} C blocks in {len(files)} files build")
    return errors


def main(argv):
    if len(argv) == 4 and argv[1] == "man":
        errors = check_man(argv[2], argv[3])
    elif len(argv) >= 6 and argv[1] == "blocks":
        files = []
        for a in argv[5:]:  # a directory stands for its *.md files
            if os.path.isdir(a):
                files += sorted(os.path.join(a, f) for f in os.listdir(a)
                                if f.endswith(".md"))
            else:
                files.append(a)
        errors = check_blocks(argv[2], argv[3], argv[4], files)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    for e in errors:
        print(f"docs: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
