"""Writes the API reference's sources (docs/api/) from ``tf_vrre.__all__`` when the build starts.

Every public name gets an entry: classes, functions and exceptions exported at the top level as
``tf_vrre.<name>`` (one page each, autosummary), public modules as ``tf_vrre.<module>`` (one page
each, autodoc of the module's ``__all__``, or of what the module defines when it has none).
Pages are named by the public import path, never by the file a name lives in, so moving code
between files changes nothing here.
"""

import inspect
import os
import types

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "api")


def version():
    import tf_vrre

    return tf_vrre.__version__


def public_names():
    """(objects, modules): the names of ``tf_vrre.__all__`` split by kind, dunders left out."""
    import tf_vrre

    objects, modules = [], []
    for name in tf_vrre.__all__:
        if name.startswith("__"):
            continue
        (modules if isinstance(getattr(tf_vrre, name), types.ModuleType) else objects).append(name)
    return objects, sorted(modules)


def module_members(module):
    """Public members of a module: its ``__all__``, else the public names it defines."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, v in vars(module).items() if not n.startswith("_")
                 and getattr(v, "__module__", None) == module.__name__
                 and (inspect.isclass(v) or inspect.isfunction(v))]
    return [n for n in names if inspect.isclass(getattr(module, n, None)) or callable(getattr(module, n, None))
            and not isinstance(getattr(module, n), types.ModuleType)]


def _kind(obj):
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        return "Exceptions"
    return "Classes" if inspect.isclass(obj) else "Functions"


def _write(path, text):
    old = open(path).read() if os.path.exists(path) else None
    if old != text:  # unchanged files keep their time stamp: no needless re-reads
        with open(path, "w") as f:
            f.write(text)


def index_page(objects, modules):
    import tf_vrre

    groups = {"Classes": [], "Functions": [], "Exceptions": []}
    for name in objects:
        groups[_kind(getattr(tf_vrre, name))].append(name)
    lines = ["API reference", "=============", "",
             "Every public name of ``tf_vrre`` (``tf_vrre.__all__``), by the path you import it from.",
             "The guides show them at work; :doc:`../architecture` shows where they live.", "",
             ".. currentmodule:: tf_vrre", ""]
    for title, names in groups.items():
        if names:
            lines += [title, "-" * len(title), "", ".. autosummary::", "   :toctree: _autosummary",
                      "   :nosignatures:", ""] + [f"   {n}" for n in names] + [""]
    lines += ["Command line", "------------", "", ".. toctree::", "   :maxdepth: 1", "", "   cli", ""]
    lines += ["Modules", "-------", "", ".. toctree::", "   :maxdepth: 1", ""]
    lines += [f"   tf_vrre.{m}" for m in modules] + [""]
    return "\n".join(lines)


def module_page(name, documented):
    """The page of module ``tf_vrre.<name>``; ``documented`` maps ``id(obj)`` to the public name
    under which an object already has its entry (each object is described once)."""
    import importlib

    module = importlib.import_module(f"tf_vrre.{name}")
    title = f"tf_vrre.{name}"
    lines = [title, "=" * len(title), "", f".. automodule:: tf_vrre.{name}", "   :no-members:", ""]
    members = module_members(module)
    if members:
        lines += [f".. currentmodule:: tf_vrre.{name}", "", ".. autosummary::", "   :nosignatures:", ""]
        own = [m for m in members if id(getattr(module, m)) not in documented]
        lines += [f"   ~{documented[id(getattr(module, m))]}" if m not in own else f"   {m}" for m in members] + [""]
        for m in own:
            documented[id(getattr(module, m))] = f"tf_vrre.{name}.{m}"
            directive = "autoclass" if inspect.isclass(getattr(module, m)) else "autofunction"
            lines += [f".. {directive}:: {m}", ""]
    return "\n".join(lines)


def cli_page():
    """``tf-vrre <command> --help`` of every subcommand, captured from the parser itself."""
    import contextlib
    import io

    from tf_vrre import cli

    os.environ["COLUMNS"] = "100"  # argparse wraps help at the terminal width
    lines = ["Command line", "============", "",
             "``tf-vrre <command> --help`` of every subcommand (the same text the console prints).", ""]
    for name in cli.SUBCOMMANDS:
        text = io.StringIO()
        with contextlib.redirect_stdout(text), contextlib.suppress(SystemExit):
            cli.parser().parse_args([name, "--help"])
        title = f"tf-vrre {name}"
        lines += [title, "-" * len(title), "", ".. code-block:: text", ""]
        lines += [f"   {line}".rstrip() for line in text.getvalue().splitlines()] + [""]
    return "\n".join(lines)


def write(app=None):
    objects, modules = public_names()
    os.makedirs(OUT, exist_ok=True)
    _write(os.path.join(OUT, "index.rst"), index_page(objects, modules))
    _write(os.path.join(OUT, "cli.rst"), cli_page())
    import tf_vrre

    documented = {id(getattr(tf_vrre, n)): f"tf_vrre.{n}" for n in objects}
    for name in modules:
        _write(os.path.join(OUT, f"tf_vrre.{name}.rst"), module_page(name, documented))
