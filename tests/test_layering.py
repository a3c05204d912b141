"""Imports point down the layers, read from the source's import statements
(those inside functions too): channel adapters hand neutral objects up and
never import a service or the API; nothing below the API imports the
package root (which builds the app); the shared formats and media files sit
below every layer."""

import ast
from pathlib import Path

import agent_platform

PACKAGE = Path(agent_platform.__file__).resolve().parent
ROOT = "agent_platform"
ABOVE_CHANNELS = ("services", "api", "web", "cli", "tools")
BELOW_API = ("channels", "services", "models", "events", "replies")
BOTTOM = ("formats", "media_files")


def module_name(path):
    parts = [ROOT, *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name):
    relative = Path(*name.split(".")[1:]) if "." in name else Path()
    return (PACKAGE / relative).with_suffix(".py").is_file() or (PACKAGE / relative).is_dir()


def imported(path):
    """Every agent_platform name `path` imports: modules, or the module a
    name that is not a module comes from (`agent_platform` for __version__)."""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
            source = ".".join(filter(None, (base, node.module)))
            for alias in node.names:
                candidate = f"{source}.{alias.name}"
                names.add(candidate if is_module(candidate) else source)
    return {name for name in names if name == ROOT or name.startswith(ROOT + ".")}


def modules_under(*layers):
    for layer in layers:
        target = PACKAGE / layer
        yield from sorted(target.rglob("*.py")) if target.is_dir() else [target.with_suffix(".py")]


def offending(paths, forbidden):
    """(module, import) pairs of `paths` that reach a `forbidden` prefix."""
    return sorted(
        (module_name(path), name)
        for path in paths
        for name in imported(path)
        if any(name == prefix or name.startswith(prefix + ".") for prefix in forbidden)
    )


def test_the_import_reader_resolves_relative_imports():
    """The reader sees what a module really imports (else every test below
    would pass on an empty set)."""
    intake = imported(PACKAGE / "channels" / "whatsapp" / "intake.py")
    assert "agent_platform.channels.adapters" in intake
    assert "agent_platform.formats" in intake
    assert "agent_platform.models" in intake
    cli = imported(PACKAGE / "cli" / "base.py")
    assert ROOT in cli  # __version__ and create_app: the top may
    services = offending(modules_under("services"), [f"{ROOT}.channels"])
    assert (f"{ROOT}.services.intake", f"{ROOT}.channels.neutral") in services


def test_channel_adapters_import_no_service_and_no_api():
    forbidden = [f"{ROOT}.{layer}" for layer in ABOVE_CHANNELS]
    assert offending(modules_under("channels"), forbidden) == []


def test_nothing_below_the_api_imports_the_package_root():
    paths = [*modules_under(*BELOW_API), *modules_under(*BOTTOM)]
    assert [pair for pair in offending(paths, [ROOT]) if pair[1] == ROOT] == []


def test_the_shared_formats_and_media_files_sit_below_every_layer():
    layers = ("services", "api", "web", "cli", "channels", "replies", "events", "tools")
    forbidden = [f"{ROOT}.{layer}" for layer in layers]
    assert offending(modules_under(*BOTTOM), forbidden) == []


def test_the_agents_tools_sit_above_the_services_they_call():
    """Tools (tools/) call services; no service, reply engine, adapter or
    model imports them (create_app hands them to the reply engine)."""
    paths = modules_under("services", "replies", "channels", "models", "events", *BOTTOM)
    assert offending(paths, [f"{ROOT}.tools"]) == []
    assert f"{ROOT}.services.appointments" in imported(PACKAGE / "tools" / "booking.py")
