#!/usr/bin/env python3
"""The layer order of docs/ARCHITECTURE.md, checked against every #include of the suite's code.

A file may include files of its own folder or of a folder below it in the order; never one above
(an include "up"). Modules (X.c with X.h, or X.cu with X.h) may not include each other in a
circle, in the same folder or across folders. Each violation is printed as file:line with the
include and why; the exit status is 1 when there is any. tests/ and bench/ stand above
everything and are not checked.

    test_layers.py [--root DIR]     check the tree (default: this file's repository)
    test_layers.py --self-test      also plant an upward include and a circle in a copy of the
                                    tree and expect both to be found
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SOURCE = re.compile(r'\.(c|h|cu|cuh)$')


def layer_order(root):
    """The folders, bottom first, from the ```layers block of docs/ARCHITECTURE.md."""
    text = open(os.path.join(root, 'docs', 'ARCHITECTURE.md')).read()
    block = re.search(r'^```layers\n(.*?)^```', text, re.S | re.M)
    if not block:
        sys.exit('docs/ARCHITECTURE.md: no ```layers block (the folders, bottom first)')
    folders = []
    for line in block.group(1).splitlines():
        name = line.split('#')[0].strip().rstrip('/')
        if name:
            folders.append(name)
    return folders


def source_files(root, folders):
    files = []
    for folder in folders:
        path = os.path.join(root, folder)
        for name in sorted(os.listdir(path)) if os.path.isdir(path) else []:
            if SOURCE.search(name) and os.path.isfile(os.path.join(path, name)):
                files.append(folder + '/' + name)
    return files


def module(path):
    return SOURCE.sub('', path)


def check(root):
    folders = layer_order(root)
    rank = {f: i for i, f in enumerate(folders)}
    problems = []
    graph = {}   # module -> {module: (file, line)}
    for path in source_files(root, folders):
        here = os.path.dirname(path)
        with open(os.path.join(root, path), errors='replace') as f:
            for number, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = os.path.normpath(m.group(1))
                if not os.path.exists(os.path.join(root, target)):
                    local = os.path.normpath(os.path.join(here, m.group(1)))
                    if os.path.exists(os.path.join(root, local)):
                        target = local
                    else:
                        continue   # a system or third-party header
                there = os.path.dirname(target)
                where = f'{path}:{number}: #include "{m.group(1)}"'
                if there not in rank:
                    problems.append(f'{where}: {there}/ is not in the layer order of docs/ARCHITECTURE.md')
                    continue
                if rank[there] > rank[here]:
                    problems.append(f'{where}: up the order ({here}/ is below {there}/)')
                if module(target) != module(path):
                    graph.setdefault(module(path), {}).setdefault(module(target), (path, number))
    problems += circles(graph)
    return problems


def circles(graph):
    """Every include circle between modules, each once, as its chain of includes."""
    found, seen = [], set()
    state = {}

    def visit(node, stack):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, {})):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):]
                key = frozenset(cycle)
                if key not in seen:
                    seen.add(key)
                    steps = []
                    for a, b in zip(cycle, cycle[1:] + [cycle[0]]):
                        f, n = graph[a][b]
                        steps.append(f'{f}:{n} -> {b}')
                    found.append('include circle: ' + '; '.join(steps))
            elif state.get(nxt) is None:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if state.get(node) is None:
            visit(node, [])
    return found


def self_test(root):
    """A planted upward include and a planted circle must both be reported."""
    with tempfile.TemporaryDirectory() as tmp:
        # Only what check() reads (the layer order and the layered folders' sources): a copy of the
        # whole checkout would copy itself where the temporary folder lies inside it.
        copy = os.path.join(tmp, 'tree')
        os.makedirs(os.path.join(copy, 'docs'))
        shutil.copy(os.path.join(root, 'docs', 'ARCHITECTURE.md'), os.path.join(copy, 'docs'))
        for path in source_files(root, layer_order(root)):
            os.makedirs(os.path.join(copy, os.path.dirname(path)), exist_ok=True)
            shutil.copy(os.path.join(root, path), os.path.join(copy, path))
        with open(os.path.join(copy, 'kernels', 'launch.h'), 'a') as f:
            f.write('\n#include "runner/cli.h"\n')
        with open(os.path.join(copy, 'data', 'dataset.h'), 'a') as f:
            f.write('\n#include "data/loader.h"\n')
        found = check(copy)
        up = [p for p in found if p.startswith('kernels/launch.h:') and 'up the order' in p]
        circle = [p for p in found if p.startswith('include circle') and 'data/dataset' in p and 'data/loader' in p]
        print(f'self-test: planted upward include reported: {up[0] if up else "NO"}')
        print(f'self-test: planted circle reported: {circle[0] if circle else "NO"}')
        return bool(up and circle)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    args = sys.argv[1:]
    if '--root' in args:
        root = args[args.index('--root') + 1]
    problems = check(root)
    for p in problems:
        print(p)
    ok = not problems
    if '--self-test' in args:
        ok = self_test(root) and ok
    print(f'{len(problems)} include problem(s) in {len(source_files(root, layer_order(root)))} files')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
