"""The folders of specdec in one order, lowest first: a module imports (at run time: at the top or inside a function;
`if TYPE_CHECKING:` blocks never run) only from its own layer or the layers below it. The order is the architecture:
the engine knows nothing of drafters' files, measurements or serving; the UI and the CLI sit on top of everything."""
from tests.test_import_cycles import MODULES, imported_modules

LAYERS = (  # lowest first; the names are specdec's top-level modules and folders
    ("errors", "config", "paths", "process", "setup_steps"),
    ("runners", "models"),
    ("engine",),
    ("drafters",),
    ("planning",),
    ("measure", "exactness"),
    ("serving", "vllm", "llamacpp"),
    ("cli", "ui"),
)
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}
ENTRY_POINTS = {"specdec", "specdec.__main__"}  # the package's facade and `python -m specdec` sit above every layer


def layer(module: str) -> int:
    return RANK[module.split(".")[1]]


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """'module -> imported' for every import in `graph` (module -> what it imports) that points up the layers."""
    return [f"{module} -> {imported}" for module in sorted(graph) if module not in ENTRY_POINTS
            for imported in sorted(graph[module])
            if imported not in ENTRY_POINTS and layer(imported) > layer(module)]


def test_every_specdec_module_belongs_to_a_layer():
    assert sorted({m.split(".")[1] for m in MODULES if m not in ENTRY_POINTS} - set(RANK)) == []


def test_no_module_imports_from_a_higher_layer():
    assert upward_imports({module: imported_modules(module) for module in MODULES}) == []


def test_an_import_up_the_layers_is_reported_and_one_down_is_not():
    graph = {"specdec.engine.decoding": {"specdec.drafters.base", "specdec.runners.threads"},
             "specdec.ui.layout": {"specdec.engine.events"}}
    assert upward_imports(graph) == ["specdec.engine.decoding -> specdec.drafters.base"]
