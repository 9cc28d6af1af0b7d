"""The import direction of the layout (README, "The layout"), read from the source with `ast`.

Every import counts, lazy ones inside functions included, and so do `importlib.import_module("…")`
and `__import__("…")` with a literal name. The rules:
- `pipeline` imports none of `config`, `adapters`, `bot`, `lab`, and reads no environment variable;
- `adapters` imports neither `config` nor `bot`, and reads no environment variable;
- no runtime package (`pipeline`, `adapters`, `bot`, `config`) imports `lab`, except the one lazy
  registration of the lab's commands in `bot/__main__.py` (`LAB_REGISTRATION`).
No runtime module is over `MAX_LINES` lines.
Options, not settings (issue 17, item 4):
- nothing under `pipeline` names `settings` (no parameter, variable, attribute or `getattr(settings, …)`),
  and no `getattr` there reads options with a fallback default;
- `bot/app.py` is the one composition root: its runtime builders (`build_*`) are defined nowhere in
  `pipeline`, and `stage_options` / `weaviate_options` build every options class;
- every `*Options` class in `pipeline` is a frozen dataclass whose fields have no defaults (the
  defaults are the settings'), and each field is the setting of the same name (or nested options).
Known violations in code that is being reworked elsewhere are named in `ALLOWED`, each with why.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUNTIME = ("pipeline", "adapters", "bot", "config")
PACKAGES = (*RUNTIME, "lab")
FORBIDDEN = {
    "pipeline": {"config", "adapters", "bot", "lab"},
    "adapters": {"config", "bot", "lab"},
    "bot": {"lab"},
    "config": {"lab"},
}
ENVIRONMENT_FREE = ("pipeline", "adapters")  # config/settings.py is the one reader of the environment
MAX_LINES = 500  # the longest a runtime module may be (issue 17, item 2)

# (file, enclosing function, imported module): the only import of the lab from runtime code.
LAB_REGISTRATION = ("bot/__main__.py", "RavbotGroup.get_command", "lab.cli")

# Named, known violations: (file, enclosing function, what) → why it is still there. Remove an entry
# with its fix (test_allow_list_entries_are_still_needed fails until then).
ALLOWED: dict[tuple[str, str, str], str] = {
    ("pipeline/embed.py", "Embedder.model", "environ"): (
        "EMBED_SETS_HF_ENV: load_embedder sets HF_HUB_OFFLINE and TOKENIZERS_PARALLELISM before the "
        "model loads; being reworked with the options of issue 17 item 4 (no environment access outside "
        "config/settings.py)"),
    ("pipeline/embed.py", "onednn_cache", "environ"): (
        "oneDNN reads ONEDNN_PRIMITIVE_CACHE_CAPACITY from the environment only, when it first runs: "
        "the embedder and the verifier set it (unless set) before their models load"),
}


@dataclass(frozen=True)
class Use:
    file: str  # relative to the repository root
    line: int
    where: str  # enclosing "Class.function", or "<module>"
    what: str  # the imported module, or "environ"


def _modules() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def _absolute(node: ast.ImportFrom, path: Path, root: Path) -> str:
    if not node.level:
        return node.module or ""
    package = path.relative_to(root).with_suffix("").parts[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


def uses(path: Path, root: Path = ROOT) -> list[Use]:
    """Every import and environment access in one file, with the function it is in."""
    rel = path.relative_to(root).as_posix()
    found: list[Use] = []

    def visit(node: ast.AST, where: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            scope = where
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                scope = [*where, child.name]
            name = ".".join(scope) or "<module>"
            if isinstance(child, ast.Import):
                found.extend(Use(rel, child.lineno, name, a.name) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                module = _absolute(child, path, root)
                found.append(Use(rel, child.lineno, name, module))
                if not child.module:  # `from . import x` imports the modules `x`
                    found.extend(Use(rel, child.lineno, name, f"{module}.{a.name}") for a in child.names)
            elif isinstance(child, ast.Call):
                func = child.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if called in ("import_module", "__import__") and child.args and isinstance(child.args[0], ast.Constant):
                    found.append(Use(rel, child.lineno, name, str(child.args[0].value)))
                if called in ("getenv", "putenv", "unsetenv"):
                    found.append(Use(rel, child.lineno, name, "environ"))
            elif isinstance(child, ast.Attribute) and child.attr == "environ":
                found.append(Use(rel, child.lineno, name, "environ"))
            visit(child, scope)

    visit(ast.parse(path.read_text(encoding="utf-8"), filename=rel), [])
    return found


def violations() -> list[str]:
    out = []
    for path in _modules():
        for use in uses(path):
            package = use.file.split("/", 1)[0]
            top = use.what.split(".", 1)[0]
            if use.what == "environ":
                bad = package in ENVIRONMENT_FREE
            else:
                bad = top in FORBIDDEN.get(package, set())
            if not bad or (use.file, use.where, use.what) in (LAB_REGISTRATION, *ALLOWED):
                continue
            out.append(f"{use.file}:{use.line} ({use.where}) uses {use.what}")
    return out


def test_imports_follow_the_layout():
    assert violations() == []


def test_no_runtime_module_is_over_the_line_limit():
    """A module that grows past `MAX_LINES` is split into modules with one job each."""
    lengths = {p.relative_to(ROOT).as_posix(): len(p.read_text(encoding="utf-8").splitlines())
               for pkg in RUNTIME for p in sorted((ROOT / pkg).rglob("*.py"))}
    assert {f: n for f, n in lengths.items() if n > MAX_LINES} == {}


def test_the_rules_catch_lazy_relative_and_dynamic_imports(tmp_path):
    pkg = tmp_path / "pipeline"
    pkg.mkdir()
    (pkg / "stage.py").write_text(
        "import os\n"
        "def run():\n    from config.settings import load_settings\n    return os.environ.get('X')\n"
        "class Helper:\n    def go(self):\n        import importlib\n        importlib.import_module('bot.app')\n"
        "from ..lab import metrics\n"
    )
    found = {(u.where, u.what) for u in uses(pkg / "stage.py", root=tmp_path)}
    assert {("run", "config.settings"), ("run", "environ"), ("Helper.go", "bot.app"), ("<module>", "lab")} <= found


def test_the_lab_registration_is_the_one_allowed_and_still_exists():
    registered = [u for u in uses(ROOT / "bot" / "__main__.py") if u.what.split(".")[0] == "lab"]
    assert [(u.file, u.where, u.what) for u in registered] == [LAB_REGISTRATION]


def test_allow_list_entries_are_still_needed():
    """An entry whose violation was fixed must go, so that it cannot hide a new one."""
    seen = {(u.file, u.where, u.what) for p in _modules() for u in uses(p)}
    assert [key for key in ALLOWED if key not in seen] == []


@pytest.mark.parametrize("argv", [["ask", "--help"], ["index", "--help"], ["serve", "--help"]])
def test_runtime_commands_load_no_lab(argv):
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from bot.__main__ import cli\n"
        f"result = CliRunner().invoke(cli, {argv!r})\n"
        "assert result.exit_code == 0, result.output\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('lab', 'sklearn', 'matplotlib'))\n"
        "print(','.join(loaded))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


def test_the_lab_commands_are_registered():
    from click.testing import CliRunner

    from bot.__main__ import cli

    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    for name in ("eval", "train-combiner", "train-verifier", "ask"):
        assert f"  {name} " in result.output
    result = CliRunner().invoke(cli, ["eval", "--help"])
    assert result.exit_code == 0 and "perturb" in result.output and "golden" in result.output


# --- options, not settings


def _pipeline_trees() -> list[tuple[str, ast.Module]]:
    return [(p.relative_to(ROOT).as_posix(), ast.parse(p.read_text(encoding="utf-8")))
            for p in sorted((ROOT / "pipeline").rglob("*.py"))]


def settings_uses(rel: str, tree: ast.Module) -> list[str]:
    """Where a module names `settings` (parameter, variable, attribute) or reads options by `getattr`."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.arg == "settings":
            out.append(f"{rel}:{node.lineno} has a parameter named settings")
        elif isinstance(node, ast.Name) and node.id == "settings":
            out.append(f"{rel}:{node.lineno} names settings")
        elif isinstance(node, ast.Attribute) and node.attr == "settings":
            out.append(f"{rel}:{node.lineno} reads .settings")
        elif (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "getattr" and node.args
              and any(word in ast.unparse(node.args[0]).lower() for word in ("settings", "options"))):
            out.append(f"{rel}:{node.lineno} reads {ast.unparse(node.args[0])} by getattr")
    return out


def test_no_stage_reads_settings():
    assert [use for rel, tree in _pipeline_trees() for use in settings_uses(rel, tree)] == []


def test_the_settings_rule_catches_parameters_attributes_and_getattr():
    tree = ast.parse(
        "def retrieve(query, *, settings):\n    return settings.top_k\n"
        "def answer(parts):\n    return parts.settings\n"
        "def verify(options):\n    return getattr(options, 'names_must_appear', False)\n")
    assert sorted(settings_uses("pipeline/stage.py", tree)) == [
        "pipeline/stage.py:1 has a parameter named settings", "pipeline/stage.py:2 names settings",
        "pipeline/stage.py:4 reads .settings", "pipeline/stage.py:6 reads options by getattr"]


def _builders() -> set[str]:
    tree = ast.parse((ROOT / "bot" / "app.py").read_text(encoding="utf-8"))
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("build_")}


def test_runtime_builders_live_in_bot_app_only():
    builders = _builders()
    assert {"build_embedder", "build_store", "build_llm", "build_wikipedia", "build_cross_encoder",
            "build_verifier"} <= builders
    defined = {f"{rel}: {node.name}" for rel, tree in _pipeline_trees() for node in ast.walk(tree)
               if isinstance(node, ast.FunctionDef) and node.name in builders}
    assert defined == set()


def _options_classes() -> list[tuple[str, ast.ClassDef]]:
    return [(rel, node) for rel, tree in _pipeline_trees() for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef) and node.name.endswith("Options")]


def test_options_are_frozen_dataclasses_without_defaults():
    classes = _options_classes()
    assert {node.name for _, node in classes} >= {"AnswerOptions", "RetrieveOptions", "VerifyOptions", "WeaviateOptions"}
    problems = []
    for rel, node in classes:
        frozen = any(isinstance(d, ast.Call) and getattr(d.func, "id", "") == "dataclass"
                     and any(k.arg == "frozen" and getattr(k.value, "value", False) is True for k in d.keywords)
                     for d in node.decorator_list)
        if not frozen:
            problems.append(f"{rel}: {node.name} is not a frozen dataclass")
        for item in node.body:
            if not isinstance(item, ast.AnnAssign) or item.value is None:
                continue
            value = item.value
            is_field = isinstance(value, ast.Call) and getattr(value.func, "id", "") == "field"
            if not is_field or any(k.arg in ("default", "default_factory") for k in value.keywords):
                problems.append(f"{rel}: {node.name}.{ast.unparse(item.target)} has a default")
    assert problems == []


def test_options_carry_each_setting_by_its_name():
    """`bot.app` fills every options field from the setting of the same name (the mapping reads by eye)."""
    import dataclasses

    from bot.app import stage_options, weaviate_options
    from config.settings import SETTINGS, load_settings

    settings = load_settings(env={}, top_k=7, weaviate_shards=3, names_must_appear=True, wikipedia="always")
    names = {s.name for s in SETTINGS}
    built = [stage_options(settings), weaviate_options(settings)]
    seen = set()
    while built:
        options = built.pop()
        seen.add(type(options).__name__)
        for f in dataclasses.fields(options):
            value = getattr(options, f.name)
            if dataclasses.is_dataclass(value):
                built.append(value)
                continue
            assert f.name in names, f"{type(options).__name__}.{f.name} is not a setting"
            expected = tuple(settings.list(f.name)) if isinstance(value, tuple) else getattr(settings, f.name)
            assert value == expected, f"{type(options).__name__}.{f.name}"
    assert seen == {node.name for _, node in _options_classes()}
