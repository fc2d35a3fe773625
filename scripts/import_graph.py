#!/usr/bin/env python3
"""recengine's import graph, folder by folder: what a newcomer sees when opening each one.

For every package (folder) of ``recengine``: its modules (files directly in it), their lines,
the subpackages it holds, and the levels of its internal imports (the longest chain of imports
among its own modules and subpackages, 1 = none imports another); then the cycles between any
two modules (strongly connected components of the whole graph; a sound layout has none).
Imports are read statically (``ast``), including those made inside functions.

Usage: ``scripts/import_graph.py [ROOT]`` (ROOT: the folder holding ``recengine``, default the
checkout this script is in).
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path


def modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of ``recengine`` (packages as ``__init__``)."""
    out = {}
    for path in sorted((root / "recengine").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of ``known`` that ``name`` imports (``from a import b`` counts ``a.b`` when
    that is a module, else ``a``)."""
    found = set()
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def levels(nodes: set[str], edges: dict[str, set[str]]) -> int:
    """The longest import chain among ``nodes`` (1 when none imports another)."""
    depth: dict[str, int] = {}

    def visit(n: str, seen: frozenset[str]) -> int:
        if n in depth:
            return depth[n]
        below = [visit(m, seen | {n}) for m in edges.get(n, ()) if m in nodes and m not in seen]
        depth[n] = 1 + max(below, default=0)
        return depth[n]

    return max((visit(n, frozenset()) for n in nodes), default=0)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out = []
    sys.setrecursionlimit(10_000)

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in list(edges):
        if v not in index:
            strong(v)
    return out


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]
    known = modules(root)
    edges = {name: imports(name, path, known) for name, path in known.items()}
    packages = sorted(n for n, p in known.items() if p.name == "__init__.py")
    print(f"{'folder':34} {'modules':>7} {'lines':>6} {'subfolders':>10} {'levels':>6}")
    for package in packages:
        children = {n for n in known if n.rpartition(".")[0] == package}
        files = [n for n in children if known[n].name != "__init__.py"]
        subs = [n for n in children if known[n].name == "__init__.py"]
        # a subpackage stands for everything inside it
        inner: dict[str, set[str]] = defaultdict(set)
        for n in children:
            for m in (x for x in known if x == n or x.startswith(n + ".")):
                for t in edges[m]:
                    for c in children:
                        if (t == c or t.startswith(c + ".")) and c != n:
                            inner[n].add(c)
        lines = sum(known[n].read_text().count("\n") for n in files)
        print(f"{package:34} {len(files):7} {lines:6} {len(subs):10} {levels(children, inner):6}")
    found = cycles(edges)
    print(
        f"\nmodules {len(known)}, imports {sum(len(e) for e in edges.values())}, "
        f"cycles {len(found)}"
    )
    for component in found:
        print("  cycle:", ", ".join(component))


if __name__ == "__main__":
    main()
