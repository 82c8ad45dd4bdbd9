"""The rooms' arrows hold by test (docs/architecture.md): every module of the source tree is parsed
and checked for an import against the arrows, a module loaded by name, the agent framework or a
prompt in the memory layer, and a module grown past the size the house aims for.

Arrows point one way: `cli -> serve, bench -> graph -> nodes -> tasks -> memory`, with the
downward skips (serve -> memory, serve -> nodes for the Context, ...). `serve` and `bench` sit
side by side: neither imports the other (a benchmark of the REST surface starts the server as a
process). `cli` may import every room: it composes the surfaces and the harnesses.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

ALLOWED: dict[str, frozenset[str]] = {
    "cli": frozenset({"serve", "bench", "graph", "nodes", "tasks", "memory"}),
    "serve": frozenset({"graph", "nodes", "tasks", "memory"}),
    "bench": frozenset({"graph", "nodes", "tasks", "memory"}),
    "graph": frozenset({"nodes", "tasks", "memory"}),
    "nodes": frozenset({"tasks", "memory"}),
    "tasks": frozenset({"memory"}),
    "memory": frozenset(),
}
"""The rooms each room may import besides itself."""

NO_NAMED_LOADING = ("memory", "serve", "graph", "nodes", "tasks")
"""Rooms where no module is loaded by a name or path computed at run time: such an import is an
arrow no reader (and no check) can see. bench/eval_ingest.py keeps its `import_module`: it reads
the files of the write path's modules to hash them, it does not use them, and bench is not one
of these rooms. `importlib.util.find_spec` and `importlib.metadata` load no code and stay
allowed (whether an optional package is installed, its version)."""

LOADERS = frozenset(
    {
        "import_module",
        "__import__",
        "reload",
        "exec_module",
        "module_from_spec",
        "spec_from_file_location",
        "load_module",
    }
)

FRAMEWORK = re.compile(r"^(langgraph|langchain[\w]*)(\.|$)")
FRAMEWORK_CLIENTS = {
    "memory/services/chat.py": "the chat clients by tier that `Services` holds (no prompt)",
    "memory/embeddings/remote.py": "the client of an OpenAI-compatible embeddings endpoint",
}
"""Memory modules that may import langchain's client packages, and why: each builds a client to
an endpoint and holds no prompt, chain or graph. LangGraph is never imported in memory/."""

PROMPT = re.compile(
    r"\bYou (are|write|route|rank|index|assess|maintain|decide|help|keep|judge|classify)\b"
    r"|\bCall the function\b|\bdata, not instructions\b|\bnot instructions to follow\b",
    re.IGNORECASE,
)
"""How the house's prompts address a model (every task's prompt matches: see the test of the
detector below); a string like that in memory/ is a prompt in the wrong room."""

MAX_LINES = 400
TOO_LARGE_FOR_NOW = {
    # Over the limit when issue 28 ended, each with what it still holds that should be split;
    # this list must shrink, not grow: an entry back under the limit fails until it is removed.
    "memory/retrieval/facts.py": "the facts ranked beside the turns: gathering and scoring together",
    "serve/api.py": "the Memory facade: every operation with its checks and its reports",
    "memory/schema.py": "every record model in one module",
    "memory/stores/neo4j/episodes.py": "the episode kind's Cypher, the largest kind",
    "memory/stores/qdrant.py": "the server backend: client, failover and search in one module",
    "memory/settings.py": "one class for every room's settings; to split by room",
}


def modules(*rooms: str) -> Iterator[tuple[str, Path]]:
    """(room, path) of every Python module of the rooms."""
    for room in rooms:
        for path in sorted((ROOT / room).rglob("*.py")):
            yield room, path


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def imported(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, module) of every import in a module, at any depth (functions, TYPE_CHECKING)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module


def back_arrows(room: str, source: str) -> list[str]:
    """The imports of a `room` module that go against the arrows."""
    found = []
    for line, module in imported(ast.parse(source)):
        target = module.split(".")[0]
        if target in ALLOWED and target != room and target not in ALLOWED[room]:
            found.append(f"{line}: {room} -> {target} ({module})")
    return found


def named_loading(source: str) -> list[str]:
    """Uses of a loader that takes a module's name or path (see `NO_NAMED_LOADING`)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
        if isinstance(node, ast.Name | ast.Attribute) and name in LOADERS:
            found.append(f"{node.lineno}: {name}")
        if isinstance(node, ast.ImportFrom) and node.module == "importlib":
            found += [f"{node.lineno}: {a.name}" for a in node.names if a.name in LOADERS]
    return found


def framework_imports(source: str) -> list[str]:
    """Imports of LangGraph or LangChain packages."""
    return [f"{line}: {m}" for line, m in imported(ast.parse(source)) if FRAMEWORK.match(m)]


def prompts(source: str) -> list[str]:
    """String constants that address a model, docstrings left out."""
    tree = ast.parse(source)
    docs = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    return [
        f"{node.lineno}: {node.value[:60]!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docs
        and PROMPT.search(node.value)
    ]


# --------------------------------------------------------------------------- the tree


def test_no_import_goes_against_the_arrows() -> None:
    found = [
        f"{rel(path)}:{arrow}"
        for room, path in modules(*ALLOWED)
        for arrow in back_arrows(room, path.read_text("utf-8"))
    ]
    assert found == [], "imports against the arrows (docs/architecture.md, Rooms):\n" + "\n".join(
        found
    )


def test_no_module_is_loaded_by_name() -> None:
    found = [
        f"{rel(path)}:{use}"
        for _, path in modules(*NO_NAMED_LOADING)
        for use in named_loading(path.read_text("utf-8"))
    ]
    assert found == [], "modules loaded by name: import them, or pass what they hold\n" + (
        "\n".join(found)
    )


def test_the_memory_layer_holds_no_agent_framework_and_no_prompt() -> None:
    framework, prompted = [], []
    for _, path in modules("memory"):
        source = path.read_text("utf-8")
        if rel(path) not in FRAMEWORK_CLIENTS:
            framework += [f"{rel(path)}:{use}" for use in framework_imports(source)]
        prompted += [f"{rel(path)}:{text}" for text in prompts(source)]
    assert framework == [], "LangGraph/LangChain in memory/:\n" + "\n".join(framework)
    assert prompted == [], "prompts in memory/ (they belong in tasks/):\n" + "\n".join(prompted)
    for name in FRAMEWORK_CLIENTS:
        uses = framework_imports((ROOT / name).read_text("utf-8"))
        assert uses and all("langgraph" not in use for use in uses), name


def test_modules_stay_under_the_size_the_house_aims_for() -> None:
    sizes = {
        rel(path): len(path.read_text("utf-8").splitlines())
        for _, path in modules("memory", "nodes", "tasks", "graph", "serve")
    }
    large = sorted(f"{n} ({lines} lines)" for n, lines in sizes.items() if lines > MAX_LINES)
    assert [n for n in large if n.split(" ")[0] not in TOO_LARGE_FOR_NOW] == [], (
        f"modules over {MAX_LINES} lines: split them (docs/architecture.md)"
    )
    back_under = [n for n in TOO_LARGE_FOR_NOW if sizes.get(n, 0) <= MAX_LINES]
    assert back_under == [], f"remove from TOO_LARGE_FOR_NOW (now small or gone): {back_under}"


# --------------------------------------------------------------------------- the checks


def test_the_checks_find_what_they_look_for() -> None:
    assert back_arrows("memory", "from graph.bookkeeping import run_episode\n") == [
        "1: memory -> graph (graph.bookkeeping)"
    ]
    assert back_arrows("tasks", "def f():\n    from nodes.state import Route\n") == [
        "2: tasks -> nodes (nodes.state)"
    ]
    assert back_arrows("serve", "import bench.rest\n") == ["1: serve -> bench (bench.rest)"]
    assert back_arrows("cli", "from serve.api import Memory\nimport bench.turn\n") == []
    assert back_arrows("nodes", "from memory.schema import Episode\nimport tasks.llm\n") == []
    loaded = "import importlib\nimportlib.import_module('graph.bookkeeping')\n__import__('x')\n"
    assert named_loading(loaded) == ["2: import_module", "3: __import__"]
    assert named_loading("from importlib import import_module\n") == ["1: import_module"]
    assert named_loading("import importlib.util\nimportlib.util.find_spec('x')\n") == []
    assert framework_imports("from langgraph.graph import StateGraph\nimport langchain_core\n")
    assert prompts('"""Doc: you are here."""\nX = 1\n"""You rank it."""\n') == []


def test_the_prompt_detector_finds_every_task_prompt() -> None:
    tasks = [
        "belief_assessment",
        "compress",
        "concept_naming",
        "diary_writing",
        "ess",
        "extract",
        "forgetting",
        "goal_assessment",
        "narrative_revision",
        "reflection",
        "rerank",
        "reverie_impression",
        "respond",
        "route",
        "sessions",
    ]
    for name in tasks:
        assert prompts((ROOT / "tasks" / f"{name}.py").read_text("utf-8")), name
