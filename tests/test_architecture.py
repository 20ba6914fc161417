"""Imports inside the package run one way, from higher layers to lower ones.

The package's modules are read with ``ast`` (nothing is imported), every import
statement is collected (at module level and inside functions, ``import x`` and
``from x import y``, absolute and relative, ``from . import mod`` resolved to the
submodule), and the test fails on

* an import of a module of a higher layer than the importing one;
* a cycle between modules (a strongly connected component of the import graph);
* an import of the test suite (``tests``) from the package;
* a dynamic import (``importlib.import_module``, ``__import__``), which would hide an
  edge from the checks above;
* a module that no layer claims (a new module must be placed in ``LAYERS``).

Each failure names the file, the line and the edge.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

import sklearn_vb

PACKAGE_DIR = Path(sklearn_vb.__file__).resolve().parent

#: Layers from the bottom up; a module may import modules of its own layer or of lower
#: ones.  Modules are named relative to the package ("" is the package's ``__init__``)
#: and claimed by the longest matching prefix.
LAYERS = [
    ("numba kernels", ["_kernels", "_version"]),
    ("distributions, estimator template, validation, data sets, emission families",
     ["_distributions", "base", "_fingerprint", "_validation", "_dag_structure", "_mrf_layout", "_mrf_inference", "_crf_layout",
      "datasets", "emissions"]),
    # the package's __init__ re-exports the estimators
    ("estimators", ["hmm", "_hmm_point", "mfa", "_mfa_search", "_mfa_hyper", "_mfa_rotate", "lds", "_lds_moves",
                    "_lds_point", "_lds_hyper", "dag", "_mfa_point", "_bernoulli_mixture", "sbn",
                    "bdmc_models", "mrf", "boltzmann", "_boltzmann_inference", "crf", ""]),
    # scoring._progress: the progress reporter shared by the slow scorers
    ("scoring", ["scoring", "scoring._progress"]),
    # samplers built on the ScoringModels
    ("samplers", ["mcmc"]),
    ("model selection", ["model_selection"]),
    # _warmup: small fits of every estimator that fill the numba cache (``python -m sklearn_vb compile``)
    ("applications", ["plotting", "_demo", "__main__", "reproduce", "_warmup"]),
]

FORBIDDEN_ROOTS = ("tests",)


@dataclass(frozen=True)
class Edge:
    source: str  # importing module (dotted, absolute)
    target: str  # imported module (dotted, absolute)
    path: Path
    line: int

    def where(self, root):
        return f"{self.path.relative_to(root.parent)}:{self.line}: {self.source} -> {self.target}"


def package_modules(package_dir):
    """``{dotted name: (path, is_package)}`` of every module under ``package_dir``."""
    package_dir = Path(package_dir)
    out = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        out[".".join(parts)] = (path, is_package)
    return out


def _resolve_from(module, is_package, node):
    """The absolute module named by ``from <node.module> import ...`` in ``module``."""
    if not node.level:
        return node.module
    base = module.split(".") if is_package else module.split(".")[:-1]
    if node.level - 1 > len(base) - 1:
        raise ValueError(f"relative import beyond the top-level package in {module}")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_edges(package_dir):
    """Every import statement of the package as Edge objects (all targets, also
    outside the package), plus the dynamic imports found."""
    modules = package_modules(package_dir)
    edges, dynamic = [], []
    for module, (path, is_package) in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                edges += [Edge(module, alias.name, path, node.lineno) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                target = _resolve_from(module, is_package, node)
                for alias in node.names:
                    submodule = f"{target}.{alias.name}"
                    # "from pkg import mod" imports the submodule mod
                    edges.append(Edge(module, submodule if submodule in modules else target,
                                      path, node.lineno))
            elif isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
                if name in ("import_module", "__import__"):
                    dynamic.append(Edge(module, "<dynamic>", path, node.lineno))
    return modules, edges, dynamic


def layer_of(module, package, layers):
    """Index of the layer claiming ``module`` (None when no layer does)."""
    relative = "" if module == package else module[len(package) + 1:]
    best, best_len = None, -1
    for index, (_, prefixes) in enumerate(layers):
        for prefix in prefixes:
            if prefix == "":
                hit = relative == ""
            else:
                hit = relative == prefix or relative.startswith(prefix + ".")
            if hit and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    return best


def strongly_connected_components(nodes, successors):
    """Tarjan's algorithm (iterative); returns the list of components."""
    index, low, on_stack, stack, components = {}, {}, set(), [], []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(successors.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(successors.get(child, ()))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(component)
    return components


def architecture_violations(package_dir, layers, forbidden_roots=FORBIDDEN_ROOTS):
    """Messages, one per violation, each naming file, line and edge."""
    package_dir = Path(package_dir)
    package = package_dir.name
    modules, edges, dynamic = import_edges(package_dir)
    messages = []
    names = [name for name, _ in layers]
    for module in modules:
        if layer_of(module, package, layers) is None:
            path = modules[module][0]
            messages.append(f"{path.relative_to(package_dir.parent)}: module {module} belongs "
                            "to no layer; add it to LAYERS")
    for edge in dynamic:
        messages.append(f"{edge.where(package_dir)}: dynamic import; import modules by name "
                        "so that the layer checks see the edge")
    internal = []
    for edge in dict.fromkeys(edges):  # one message per statement and target
        root = edge.target.split(".")[0]
        if root in forbidden_roots:
            messages.append(f"{edge.where(package_dir)}: the package imports the test suite")
            continue
        if root != package:
            continue
        if edge.target not in modules:
            messages.append(f"{edge.where(package_dir)}: imports a module that does not exist")
            continue
        internal.append(edge)
        src, dst = layer_of(edge.source, package, layers), layer_of(edge.target, package, layers)
        if src is not None and dst is not None and dst > src:
            messages.append(f"{edge.where(package_dir)}: imports upwards, from layer "
                            f"'{names[src]}' to layer '{names[dst]}'")
    successors = {}
    for edge in internal:
        successors.setdefault(edge.source, set()).add(edge.target)
    for component in strongly_connected_components(sorted(modules), successors):
        members = set(component)
        if len(members) == 1 and component[0] not in successors.get(component[0], ()):
            continue
        inside = sorted((e for e in internal if e.source in members and e.target in members),
                        key=lambda e: (str(e.path), e.line))
        messages.append("import cycle between " + ", ".join(sorted(members)) + ":\n    "
                        + "\n    ".join(e.where(package_dir) for e in inside))
    return messages


# --------------------------------------------------------------------------- the package


def test_every_import_points_down_and_no_cycles():
    violations = architecture_violations(PACKAGE_DIR, LAYERS)
    assert not violations, "\n".join(violations)


def test_estimators_know_nothing_of_scoring():
    # the bridge runs one way: sklearn_vb.scoring.models registers the estimators
    _, edges, _ = import_edges(PACKAGE_DIR)
    estimators = {f"sklearn_vb.{m}" for m in ("hmm", "mfa", "lds", "dag", "_bernoulli_mixture")}
    bad = [e.where(PACKAGE_DIR) for e in edges
           if e.source in estimators and e.target.startswith("sklearn_vb.scoring")]
    assert not bad, "\n".join(bad)


def _estimator_private_uses(path):
    """``(line, name)`` of every private attribute read from the estimator an adapter
    wraps (``estimator._x``, ``est._x``, ``self.estimator._x``)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                and not node.attr.startswith("__")):
            continue
        owner = node.value
        if isinstance(owner, ast.Name) and owner.id in ("estimator", "est"):
            out.append((node.lineno, node.attr))
        elif (isinstance(owner, ast.Attribute) and owner.attr == "estimator"
              and isinstance(owner.value, ast.Name) and owner.value.id == "self"):
            out.append((node.lineno, node.attr))
    return out


def test_scoring_models_use_only_public_estimator_attributes():
    # the adapters read fitted attributes and prepare data through check_data, so an
    # estimator's private layout can change without breaking its scoring model
    bad = [f"{path.relative_to(PACKAGE_DIR.parent)}:{line}: estimator.{name}"
           for path in sorted((PACKAGE_DIR / "scoring").rglob("*.py"))
           for line, name in _estimator_private_uses(path)]
    assert not bad, "\n".join(bad)


# --------------------------------------------------------------------------- the checker


def _write_package(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root / "pkg"


TOY_LAYERS = [("low", ["low"]), ("mid", ["mid", ""]), ("high", ["high"])]


def test_checker_accepts_a_clean_package(tmp_path):
    pkg = _write_package(tmp_path, {
        "pkg/__init__.py": "from .mid import f\n",
        "pkg/low/__init__.py": "",
        "pkg/low/a.py": "import numpy as np\n",
        "pkg/low/b.py": "from . import a\n",
        "pkg/mid.py": "from .low import b\nfrom pkg.low.a import np\n\ndef f():\n    pass\n",
        "pkg/high.py": "def g():\n    from . import mid\n    import pkg.low.a\n",
    })
    assert architecture_violations(pkg, TOY_LAYERS) == []


def test_private_attribute_check_catches_a_planted_use(tmp_path):
    path = tmp_path / "adapter.py"
    path.write_text("class M:\n    def __init__(self, estimator):\n"
                    "        self.estimator = estimator\n        self.k = estimator.n_\n"
                    "        self.x = self.estimator._layout\n        d = estimator.__dict__\n")
    assert _estimator_private_uses(path) == [(5, "_layout")]


def test_checker_catches_a_planted_upward_edge(tmp_path):
    pkg = _write_package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/low/__init__.py": "",
        "pkg/low/a.py": "def f():\n    x = 1\n    from .. import high  # hidden in a function\n",
        "pkg/mid.py": "",
        "pkg/high.py": "",
    })
    (message,) = architecture_violations(pkg, TOY_LAYERS)
    assert message.startswith("pkg/low/a.py:3: pkg.low.a -> pkg.high: imports upwards")
    assert "'low'" in message and "'high'" in message


@pytest.mark.parametrize("statement", [
    "import pkg.high",
    "from pkg.high import thing",
    "from pkg import high",
    "from ..high import thing",
])
def test_checker_resolves_every_import_form(tmp_path, statement):
    pkg = _write_package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/low/__init__.py": "",
        "pkg/low/a.py": statement + "\n",
        "pkg/mid.py": "",
        "pkg/high.py": "thing = 1\n",
    })
    (message,) = architecture_violations(pkg, TOY_LAYERS)
    assert "pkg.low.a -> pkg.high: imports upwards" in message


def test_checker_catches_a_cycle_within_a_layer(tmp_path):
    pkg = _write_package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/low/__init__.py": "",
        "pkg/low/a.py": "from .b import y\nx = 1\n",
        "pkg/low/b.py": "def y():\n    from .a import x\n",
        "pkg/mid.py": "",
        "pkg/high.py": "",
    })
    (message,) = architecture_violations(pkg, TOY_LAYERS)
    assert message.startswith("import cycle between pkg.low.a, pkg.low.b")
    assert "pkg/low/a.py:1: pkg.low.a -> pkg.low.b" in message
    assert "pkg/low/b.py:2: pkg.low.b -> pkg.low.a" in message


def test_checker_catches_tests_dynamic_and_unplaced_modules(tmp_path):
    pkg = _write_package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/low/__init__.py": "",
        "pkg/low/a.py": "from tests.oracles import models\n",
        "pkg/mid.py": "import importlib\nm = importlib.import_module('pkg.high')\n",
        "pkg/high.py": "",
        "pkg/stray.py": "",
    })
    messages = architecture_violations(pkg, TOY_LAYERS)
    assert len(messages) == 3
    assert any(m.startswith("pkg/stray.py: module pkg.stray belongs to no layer") for m in messages)
    assert any(m.startswith("pkg/mid.py:2: pkg.mid -> <dynamic>: dynamic import") for m in messages)
    assert any(m.startswith("pkg/low/a.py:1: pkg.low.a -> tests.oracles: the package imports "
                            "the test suite") for m in messages)
