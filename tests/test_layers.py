"""Which frerlab modules may load which: the layers the package keeps, checked in fresh
interpreters so that nothing imported earlier hides a dependency. A report is rendered from
stored results only, so it runs where the native module (and with it the eBPF loader, the
data plane and the testbed) cannot even be imported; the base modules everything else builds
on (errors, names, files, yamlfile, units) load no frerlab module above them; the eBPF
plumbing (frerlab.bpfsys) sits below the data plane and the impairment element. And every
import statement of the package, read from the source, goes from a layer to its own or a lower
one of LAYERS (the table README.md shows). No root needed."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
QUICK = ROOT / "tests" / "fixtures" / "results" / "quick"
#: The modules every other one may build on; each of them loads only modules of this set.
BASE = ("frerlab.errors", "frerlab.names", "frerlab.files", "frerlab.yamlfile", "frerlab.units")
PACKAGE = ROOT / "python" / "frerlab"
#: The package's layers, lowest first (README.md, "How the parts fit"): a module is in the layer
#: of the longest prefix that names it; every area's cli.py is in "command".
LAYERS = {
    "base": ("errors", "names", "files", "yamlfile", "units", "statefiles", "processes", "cli_output"),
    "core": ("frer", "pcap", "_native"),
    "kernel": ("bpfsys", "netns"),
    "elements": ("dataplane", "impair"),
    "systems": ("testbed", "traffic", "capture", "remote", "dataplane.twopath"),
    "studies": ("bench", "sim", "net", "config", "crosscheck", "attack"),
    "pages": ("report",),
    "command": ("cli", "demo"),
}
#: What a page may take from a higher layer: the light statistics, verdicts and metric meanings of bench.
PAGES_MAY_USE = ("bench.stats", "bench.verdict", "bench.metrics")
#: Makes `import frerlab._native` fail in the interpreter it runs in, as where it was never built.
NO_NATIVE = """
import importlib.abc, sys

class NoNative(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "frerlab._native":
            raise ImportError("frerlab._native is not importable in this test")
        return None

sys.meta_path.insert(0, NoNative())
"""


def loaded_after(code: str) -> list[str]:
    """The frerlab modules loaded once `code` has run in a fresh interpreter."""
    script = code + "\nimport json, sys\nprint(json.dumps(sorted(m for m in sys.modules if m.startswith('frerlab'))))\n"
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_a_report_is_built_from_stored_results_without_the_native_module(tmp_path):
    loaded = loaded_after(NO_NATIVE + textwrap.dedent(f"""
        from pathlib import Path
        import frerlab.bench.stats, frerlab.report, frerlab.report.cli
        from frerlab.report import write_report
        drawn = write_report([Path({str(QUICK)!r})], Path({str(tmp_path / "report.html")!r}),
                             Path({str(tmp_path / "images")!r}))
        assert drawn, "no figure drawn"
    """))
    assert (tmp_path / "report.html").stat().st_size > 0
    assert "frerlab.report.page" in loaded and "frerlab.bench.stats" in loaded
    heavy = [m for m in loaded if m == "frerlab._native" or m.startswith(("frerlab.dataplane", "frerlab.testbed"))]
    assert heavy == []


@pytest.mark.parametrize("module", BASE)
def test_a_base_module_loads_no_frerlab_module_above_it(module):
    above = set(loaded_after(f"import {module}")) - {"frerlab", *BASE}
    assert above == set(), f"{module} loads {sorted(above)}"


def test_the_bpf_plumbing_sits_below_the_data_plane_and_the_impairment_element():
    above = [m for m in loaded_after("import frerlab.bpfsys")
             if m.startswith(("frerlab.dataplane", "frerlab.impair", "frerlab.testbed"))]
    assert above == []
    impair = loaded_after("import frerlab.impair.path")
    assert "frerlab.bpfsys" in impair and not [m for m in impair if m.startswith("frerlab.dataplane")]


def layer(module: str) -> int:
    """The index in LAYERS of `module` (dotted, without "frerlab.")."""
    if module == "cli" or module.endswith(".cli"):
        return len(LAYERS) - 1
    found = [(len(prefix), i) for i, prefixes in enumerate(LAYERS.values()) for prefix in prefixes
             if module == prefix or module.startswith(prefix + ".")]
    assert found, f"frerlab.{module} is in no layer of LAYERS: add it to one"
    return max(found)[1]


def frerlab_imports(tree: ast.Module) -> list[tuple[str, int]]:
    """Every frerlab module `tree` imports (dotted, without "frerlab."), with its line."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names if a.name.startswith("frerlab.")]
        elif isinstance(node, ast.ImportFrom) and node.module == "frerlab":
            found += [(f"frerlab.{a.name}", node.lineno) for a in node.names if a.name != "__version__"]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("frerlab."):
            found.append((node.module, node.lineno))
    return [(name.removeprefix("frerlab."), line) for name, line in found]


def test_every_import_of_the_package_goes_to_its_own_layer_or_a_lower_one():
    names = list(LAYERS)
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE).with_suffix("").parts).removesuffix(".__init__")
        if module == "__init__":
            continue
        for imported, line in frerlab_imports(ast.parse(path.read_text(), str(path))):
            allowed = layer(module) == names.index("pages") and imported.startswith(PAGES_MAY_USE)
            if layer(imported) > layer(module) and not allowed:
                upward.append(f"{path.relative_to(ROOT)}:{line}: frerlab.{module} ({names[layer(module)]}) imports "
                              f"frerlab.{imported} ({names[layer(imported)]})")
    assert upward == [], "\n".join(upward)


def test_the_layer_check_finds_an_upward_import():
    tree = ast.parse("from frerlab.testbed import bed\nimport frerlab.report.page\n")
    assert frerlab_imports(tree) == [("testbed", 1), ("report.page", 2)]
    assert layer("netns") < layer("testbed.bed") < layer("report.page") < layer("bench.cli")
    assert layer("dataplane.twopath") == list(LAYERS).index("systems") > layer("dataplane.node")
