"""Package boundaries: only specdec.ui imports gradio or plotly, and the UI never touches torch. Inside the UI, imports
point one way (README, "Layout"): plain data and state (PLAIN) <- views (pure renderers) <- the shared modules (wiring,
session, guard, sidebar, ...) <- the tabs (tabs/<tab>/layout.py and callbacks.py, each importing no other tab) <- the
page shell (SHELL); and no module of specdec imports another module's private (leading underscore) name."""
import ast
import re
from pathlib import Path

SPECDEC = Path(__file__).resolve().parent.parent / "specdec"
UI = "specdec.ui"
PLAIN = {"specdec.ui.session", "specdec.ui.exercises", "specdec.ui.tour_state", "specdec.ui.cost_prediction"}
SHELL = {"specdec.ui", "specdec.ui.layout", "specdec.ui.launch"}  # the package's entry, the page, the server


def imports_of(path: Path) -> set[str]:
    text = path.read_text()
    return set(re.findall(r"^\s*(?:from|import)\s+([a-zA-Z_][\w]*)", text, flags=re.MULTILINE))


def test_only_the_ui_package_imports_gradio_or_plotly():
    offenders = [str(p.relative_to(SPECDEC)) for p in SPECDEC.rglob("*.py")
                 if "ui" not in p.relative_to(SPECDEC).parts and imports_of(p) & {"gradio", "plotly"}]
    assert offenders == []


def test_the_ui_never_imports_torch():
    offenders = [p.name for p in (SPECDEC / "ui").rglob("*.py") if "torch" in imports_of(p)]
    assert offenders == []


# --- inside the UI -----------------------------------------------------------------------------------------------

def module_name(path: Path) -> str:
    parts = path.relative_to(SPECDEC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in SPECDEC.rglob("*.py")}
UI_MODULES = {name: path for name, path in MODULES.items() if name == UI or name.startswith(UI + ".")}


def imported(name: str, source: str, modules=MODULES) -> list[tuple[str, str]]:
    """(module, name or "") for every import in `source` (type-checking ones too: a layer is a layer to a reader as
    well); a module imported whole, or an attribute read from a module bound by an import, as (module, attribute)."""
    package = name if modules.get(name, Path()).name == "__init__.py" else name.rsplit(".", 1)[0]
    tree, found, bound = ast.parse(source), [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                if f"{module}.{alias.name}" in modules:
                    found.append((f"{module}.{alias.name}", ""))
                    bound[alias.asname or alias.name] = f"{module}.{alias.name}"
                else:
                    found.append((module, alias.name))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                found.append((alias.name, ""))
                if alias.asname:
                    bound[alias.asname] = alias.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
            found.append((bound[node.value.id], node.attr))
    return found


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports(name: str, source: str, modules=MODULES) -> list[str]:
    return sorted({f"{name} <- {module}.{attr}" for module, attr in imported(name, source, modules)
                   if module != name and module.startswith("specdec") and is_private(attr)})


def layer(name: str) -> str:
    if name in SHELL:
        return "shell"
    if name in PLAIN:
        return "plain"
    if name.startswith(UI + ".views"):
        return "views"
    if name.startswith(UI + ".tabs.") and name.count(".") >= 4:
        return "tab " + name.split(".")[3]
    return "shared"


ALLOWED = {  # the layers a module of each layer may import from (its own tab included, for a tab)
    "plain": {"plain"},
    "views": {"plain", "views"},
    "shared": {"plain", "views", "shared"},
    "shell": {"plain", "views", "shared", "tab", "shell"},
}


def wrong_way(name: str, source: str, modules=MODULES) -> list[str]:
    """The imports of `name` that point up the UI's layers (or into another tab)."""
    mine, offenders = layer(name), set()
    for module, _ in imported(name, source, modules):
        if not (module == UI or module.startswith(UI + ".")) or module not in modules or module == name:
            continue
        theirs = layer(module)
        if mine.startswith("tab "):
            ok = theirs in {"plain", "views", "shared", mine}
        else:
            ok = theirs.split()[0] in ALLOWED[mine]
        if not ok:
            offenders.add(f"{name} ({mine}) -> {module} ({theirs})")
    return sorted(offenders)


def test_the_checks_find_a_private_name_and_an_import_up_the_layers():
    modules = {**MODULES, "specdec.ui.views.fake": Path("fake.py")}
    source = ("from specdec.ui.views.cards import _hidden\nfrom specdec.ui.tabs.race import callbacks\n"
              "from specdec.ui import lab\nx = lab._private\n")
    assert private_imports("specdec.ui.views.fake", source, modules) == [
        "specdec.ui.views.fake <- specdec.ui.lab._private", "specdec.ui.views.fake <- specdec.ui.views.cards._hidden"]
    assert wrong_way("specdec.ui.views.fake", source, modules) == [
        "specdec.ui.views.fake (views) -> specdec.ui.lab (shared)",
        "specdec.ui.views.fake (views) -> specdec.ui.tabs.race.callbacks (tab race)"]
    assert wrong_way("specdec.ui.tabs.sweep.layout", "from specdec.ui.tabs.race import vllm\n") == [
        "specdec.ui.tabs.sweep.layout (tab sweep) -> specdec.ui.tabs.race.vllm (tab race)"]


def test_every_tab_is_a_folder_with_its_layout():
    tabs = [p for p in (SPECDEC / "ui" / "tabs").iterdir() if p.is_dir() and p.name != "__pycache__"]
    assert tabs and [p.name for p in tabs if not (p / "layout.py").exists()] == []
    assert [p.name for p in (SPECDEC / "ui" / "tabs").glob("*.py") if p.name != "__init__.py"] == []


def test_no_module_imports_a_private_name_of_another_module():
    offenders = [o for name, path in MODULES.items() for o in private_imports(name, path.read_text())]
    assert offenders == []


def test_ui_imports_point_one_way_and_no_tab_imports_another():
    offenders = [o for name, path in UI_MODULES.items() for o in wrong_way(name, path.read_text())]
    assert offenders == []
