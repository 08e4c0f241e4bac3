#!/usr/bin/env python3
"""The layer order of docs/ARCHITECTURE.md, checked against every #include of the suite's code.

A file may include files of its own folder or of a folder below it in the order; never one above
(an include "up"). Files may not depend on each other in a circle, in the same folder or across
folders: the graph's nodes are files, X.c (or X.cu) with its X.h counting as one, and X depends on
Y when X includes Y's header, or when X includes a header that declares a function Y.c defines and
names that function (a header shared by several .c files is, for each of its functions, the file
that defines it). Each violation is printed as file:line with the include or the name and why;
the exit status is 1 when there is any. tests/ and bench/ stand above everything and are not
checked.

    test_layers.py [--root DIR]     check the tree (default: this file's repository)
    test_layers.py --self-test      also plant an upward include, an include circle and a circle
                                    through a shared header in a copy of the tree and expect all
                                    three to be found
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
    for a, b, where in uses(root, folders):
        graph.setdefault(a, {}).setdefault(b, where)
    problems += circles(graph)
    return problems


FUNCTION = re.compile(r'^(?!static\b|typedef\b|#|return\b|extern "C")[A-Za-z_][\w \*]*?\b([A-Za-z_]\w*)\s*\(', re.M)
NAME = re.compile(r'\b[A-Za-z_]\w*\b')


def code_only(text):
    """The text without comments and string literals (lines kept, for the line numbers)."""
    text = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), text, flags=re.S)
    text = re.sub(r'//[^\n]*', '', text)
    return re.sub(r'"(\\.|[^"\\\n])*"', '""', text)


def uses(root, folders):
    """(X, Y, (file, line)) for every file X that names a function Y.c defines through a header it
    includes (its own header's includes too) which declares it: the dependencies a header shared
    by several files hides from the include graph."""
    files = source_files(root, folders)
    code = {p: code_only(open(os.path.join(root, p), errors='replace').read()) for p in files}
    declared, defined = {}, {}
    for path, text in code.items():
        for m in FUNCTION.finditer(text):
            rest, depth = text[m.end() - 1:], 0
            for end, ch in enumerate(rest):
                depth += (ch == '(') - (ch == ')')
                if depth == 0:
                    break
            after = rest[end + 1:end + 200].lstrip()
            if path.endswith(('.h', '.cuh')) and after.startswith((';', '__attribute__')):
                declared.setdefault(m.group(1), set()).add(path)
            elif path.endswith(('.c', '.cu')) and after.startswith('{'):
                defined[m.group(1)] = path
    includes = {}
    for path in files:
        here = os.path.dirname(path)
        found = set()
        for name in re.findall(r'^\s*#\s*include\s*"([^"]+)"', open(os.path.join(root, path), errors='replace').read(), re.M):
            target = os.path.normpath(name)
            if not os.path.exists(os.path.join(root, target)):
                target = os.path.normpath(os.path.join(here, name))
            found.add(target)
        includes[path] = found
    edges = []
    for path, text in code.items():
        own = module(path) + '.h'
        seen = set(includes[path]) | ({own} if own in includes else set())
        for header in list(seen):
            seen |= includes.get(header, set())
        linked = set()
        for m in NAME.finditer(text):
            name = m.group(0)
            there = defined.get(name)
            if not there or module(there) == module(path) or module(there) in linked:
                continue
            headers = declared.get(name, set())
            if path in headers or not headers & seen:
                continue   # a header's own declaration, or a name it does not reach through its includes
            linked.add(module(there))
            edges.append((module(path), module(there), (path, text.count('\n', 0, m.start()) + 1)))
    return edges


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
        # two files behind one header, each calling the other's function
        with open(os.path.join(copy, 'base', 'planted.h'), 'w') as f:
            f.write('int planted_one(void);\nint planted_two(void);\n')
        with open(os.path.join(copy, 'base', 'planted_one.c'), 'w') as f:
            f.write('#include "base/planted.h"\nint planted_one(void) {\n    return planted_two();\n}\n')
        with open(os.path.join(copy, 'base', 'planted_two.c'), 'w') as f:
            f.write('#include "base/planted.h"\nint planted_two(void) {\n    return planted_one();\n}\n')
        found = check(copy)
        up = [p for p in found if p.startswith('kernels/launch.h:') and 'up the order' in p]
        circle = [p for p in found if p.startswith('include circle') and 'data/dataset' in p and 'data/loader' in p]
        shared = [p for p in found if p.startswith('include circle') and 'base/planted_one' in p and 'base/planted_two' in p]
        print(f'self-test: planted upward include reported: {up[0] if up else "NO"}')
        print(f'self-test: planted circle reported: {circle[0] if circle else "NO"}')
        print(f'self-test: planted circle through a shared header reported: {shared[0] if shared else "NO"}')
        return bool(up and circle and shared)


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
