#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""embed.py -- turn the Lua scripts of src/lua/ into C at build time.

    embed.py OUT.c DEPFILE SCRIPT.lua...

Each script becomes one entry of script_table (script.h), indexed by
SCRIPT_<NAME> (the file's name in capitals): its body as Redis sees it,
the body's length and SHA-1 (what EVALSHA names), and the numbers of keys
and arguments its contract allows.

A script file opens with its contract, a block of comment lines. Two of
them are read here:

    -- keys: 1..4      how many KEYS the script takes: N, N..M or N..
    -- args: 9         the same for ARGV

The body is the rest of the file, with three changes: a line
"--@include lib/x.lua" is replaced by that file's body (its path relative
to the script's directory, also in a library file; includes nest), and every line that is
only a comment, or blank, is left out. So the contract, and any comment
on a line of its own, costs Redis nothing, and one script is one
self-contained text. A comment at the end of a line of code stays. Lua's
block comments and long strings ("--[[", "[[") are refused: a line of
them that starts with "--" would be left out.

DEPFILE lists every file read, for ninja to run this again when a library
file changes.
"""

import hashlib
import os
import re
import sys

INCLUDE = re.compile(r'^--@include\s+(\S+)\s*$')
LONG = re.compile(r'\[=*\[')
COUNT = re.compile(r'^--\s*(keys|args):\s*(\d+)(\.\.(\d*))?\s*$')
# What "N.." (no upper bound) becomes in C: script.h's SCRIPT_UNBOUNDED.
UNBOUNDED = 'SCRIPT_UNBOUNDED'


class ScriptError(Exception):
    pass


def expand(path, root, seen, read):
    """The body of path: includes (relative to root) expanded, comment
    and blank lines left out. seen: the files including it (a cycle is an
    error); read: every file read, for the depfile."""
    if path in seen:
        raise ScriptError('%s: includes itself' % path)
    read.append(path)
    out = []
    with open(path, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            if not line.endswith('\n'):
                line += '\n'
            if LONG.search(line):
                raise ScriptError('%s:%d: no block comments or long strings'
                                  % (path, n))
            m = INCLUDE.match(line.strip())
            if m:
                sub = os.path.join(root, m.group(1))
                if not os.path.isfile(sub):
                    raise ScriptError('%s:%d: no file %s' % (path, n, sub))
                out.append(expand(sub, root, seen + [path], read))
            elif line.strip() == '' or line.lstrip().startswith('--'):
                continue
            else:
                out.append(line)
    return ''.join(out)


def contract(path):
    """(keys_min, keys_max, args_min, args_max) from the comment block at
    the top of path; a max of None has no bound."""
    counts = {}
    with open(path, encoding='utf-8') as f:
        for line in f:
            if not line.startswith('--'):
                break
            m = COUNT.match(line.strip())
            if not m:
                continue
            lo = int(m.group(2))
            if not m.group(3):
                hi = lo
            elif m.group(4) == '':
                hi = None
            else:
                hi = int(m.group(4))
            if hi is not None and hi < lo:
                raise ScriptError('%s: %s range %d..%d is empty'
                                  % (path, m.group(1), lo, hi))
            if m.group(1) in counts:
                raise ScriptError('%s: two "-- %s:" lines' % (path, m.group(1)))
            counts[m.group(1)] = (lo, hi)
    for what in ('keys', 'args'):
        if what not in counts:
            raise ScriptError('%s: the contract has no "-- %s: N" line'
                              % (path, what))
    return counts['keys'] + counts['args']


def c_bytes(name, data):
    """A NUL-terminated char array of data, as C (no string literal: ISO C
    bounds a literal's length, and some bodies pass it)."""
    rows = []
    raw = data + b'\0'
    for i in range(0, len(raw), 12):
        rows.append('    ' + ', '.join('0x%02x' % b for b in raw[i:i + 12]) +
                    ',')
    return 'static const char %s[%d] = {\n%s\n};\n' % (name, len(raw),
                                                        '\n'.join(rows))


def bound(v):
    return UNBOUNDED if v is None else str(v)


def main(argv):
    if len(argv) < 4:
        sys.stderr.write(__doc__)
        return 2
    out_c, depfile, scripts = argv[1], argv[2], argv[3:]
    read, bodies, entries = [], [], []
    names = set()
    try:
        for path in scripts:
            name = os.path.splitext(os.path.basename(path))[0]
            if not re.match(r'^[a-z][a-z0-9_]*$', name) or name in names:
                raise ScriptError('%s: a script name is unique, [a-z0-9_]'
                                  % path)
            names.add(name)
            kmin, kmax, amin, amax = contract(path)
            body = expand(path, os.path.dirname(path), [],
                          read).encode('utf-8')
            sha = hashlib.sha1(body).hexdigest()
            var = 'body_' + name
            bodies.append('/* %s (%s) */\n' % (name, os.path.basename(path)) +
                          c_bytes(var, body))
            entries.append(
                '    [SCRIPT_%s] = {"%s", %s, %d, "%s", %d, %s, %d, %s},'
                % (name.upper(), name, var, len(body), sha, kmin, bound(kmax),
                   amin, bound(amax)))
    except (OSError, ScriptError) as e:
        sys.stderr.write('embed.py: %s\n' % e)
        return 1
    text = ('/* Generated by src/lua/embed.py from src/lua/: do not edit. */\n'
            '#include "script.h"\n\n' + '\n'.join(bodies) +
            '\nconst struct script_info script_table[SCRIPT_COUNT] = {\n' +
            '\n'.join(entries) + '\n};\n\n'
            '/* One file per script_id: with every name above one of the '
            'enum\'s,\n * and none twice, the count makes it one each. */\n'
            '_Static_assert(SCRIPT_COUNT == %d, "a script_id without its '
            'file in src/lua/, or the other way round");\n' % len(scripts))
    with open(out_c, 'w', encoding='utf-8') as f:
        f.write(text)
    deps = sorted(set(read))
    with open(depfile, 'w', encoding='utf-8') as f:
        f.write('%s: %s\n' % (out_c.replace(' ', '\\ '),
                              ' '.join(d.replace(' ', '\\ ') for d in deps)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
