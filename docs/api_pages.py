"""Writes the API reference's sources (docs/api/) from ``tf_vrre.__all__`` and the package's modules
when the build starts.

The public API (``tf_vrre.__all__``, the list in ``tf_vrre/__init__.pyi``) gets one page per name
(autosummary), grouped into classes, functions and exceptions; every public module
(``tf_vrre.sgmcmc.schedules``, ``tf_vrre.diagnostics``, ...: no ``_private`` part; the command
line has its own page) gets one page (autodoc of the module's ``__all__``, or of what it defines
when it has none). Pages are named by the import path, so moving code between files needs no
edit here; each object is described once (a public name as ``tf_vrre.<name>``, anything else
on the page of the module that defines it) and linked from the other pages that list it.
"""

import importlib
import inspect
import os
import pkgutil
import types

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "api")

NAMESPACE = os.path.join(os.path.dirname(HERE), "tests", "helpers", "_doctest_namespace.py")
"""The names every ``>>>`` example may use (the doctests run with them); shown once, on the index."""


def examples_assume():
    """The index's last section: the set-up every docstring example assumes, the code itself."""
    source = open(NAMESPACE).read()
    setup = source[source.index("import keras") : source.index("\ndef namespace")].rstrip()
    return (
        [".. _examples-assume:", ""]
        + _heading("Examples assume", "-")
        + [
            "The ``>>>`` examples on these pages run as tests, each in a fresh namespace that already holds",
            "these names, so each example shows only what it documents; examples that write files use",
            "relative paths (``runs/toy``) and run in an empty working directory:",
            "",
            ".. code-block:: python",
            "",
        ]
        + [f"   {line}".rstrip() for line in setup.splitlines()]
        + [""]
    )


def version():
    import tf_vrre

    return tf_vrre.__version__


def public_names():
    """The names of ``tf_vrre.__all__`` (classes and functions; dunders left out)."""
    import tf_vrre

    return [name for name in tf_vrre.__all__ if not name.startswith("__")]


def public_modules():
    """Every module a user imports by its own path, sorted: no part of the name starts with ``_``
    and the command line is left out (the ``Command line`` page shows its ``--help``)."""
    import tf_vrre

    names = [m.name for m in pkgutil.walk_packages(tf_vrre.__path__, "tf_vrre.")]
    return sorted(
        n
        for n in names
        if not any(part.startswith("_") for part in n.split("."))
        and n != "tf_vrre.cli"
        and not n.startswith("tf_vrre.cli.")
    )


def module_members(module):
    """Public members of a module: its ``__all__``, else the public names it defines."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [
            n
            for n, v in vars(module).items()
            if not n.startswith("_")
            and getattr(v, "__module__", None) == module.__name__
            and (inspect.isclass(v) or inspect.isfunction(v))
        ]
    return [
        n
        for n in names
        if inspect.isclass(getattr(module, n, None))
        or callable(getattr(module, n, None))
        and not isinstance(getattr(module, n), types.ModuleType)
    ]


def _kind(obj):
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        return "Exceptions"
    return "Classes" if inspect.isclass(obj) else "Functions"


def _write(path, text):
    old = open(path).read() if os.path.exists(path) else None
    if old != text:  # unchanged files keep their time stamp: no needless re-reads
        with open(path, "w") as f:
            f.write(text)


def _heading(title, underline):
    return [title, underline * len(title), ""]


def index_page(objects, modules):
    import tf_vrre

    groups = {"Classes": [], "Functions": [], "Exceptions": []}
    for name in objects:
        groups[_kind(getattr(tf_vrre, name))].append(name)
    lines = _heading("API reference", "=") + [
        "The public API is ``tf_vrre.<name>`` for every name below (``tf_vrre.__all__``, listed in",
        "``tf_vrre/__init__.pyi``); the modules further down hold the rest, each imported by its own path.",
        "The guides show them at work; :doc:`../architecture` shows where they live. The ``>>>``",
        "examples assume a small set-up (toy data ``x, y``, ``net``, ``toy_sampler``): :ref:`examples-assume`.",
        "",
        ".. currentmodule:: tf_vrre",
        "",
    ]
    for title, names in groups.items():
        if names:
            lines += (
                _heading(title, "-")
                + [".. autosummary::", "   :toctree: _autosummary", "   :nosignatures:", ""]
                + [f"   {n}" for n in names]
                + [""]
            )
    lines += _heading("Command line", "-") + [".. toctree::", "   :maxdepth: 1", "", "   cli", ""]
    lines += _heading("Modules", "-")
    for package in sorted({".".join(m.split(".")[:2]) for m in modules}):
        inside = [m for m in modules if m == package or m.startswith(package + ".")]
        lines += [f"``{package}``", "", ".. toctree::", "   :maxdepth: 1", ""] + [f"   {m}" for m in inside] + [""]
    lines += examples_assume()
    return "\n".join(lines)


def canonical_names(objects, modules):
    """``{id(obj): its entry}``: a name of the public API is described as ``tf_vrre.<name>``,
    anything else on the page of the public module that defines it (``obj.__module__``), so a
    package that re-exports a function named like its module (``models.cnn``) links there."""
    import tf_vrre

    entries = {id(getattr(tf_vrre, n)): f"tf_vrre.{n}" for n in objects}
    for name in modules:
        module = importlib.import_module(name)
        for member in module_members(module):
            obj = getattr(module, member)
            if getattr(obj, "__module__", None) == name:
                entries.setdefault(id(obj), f"{name}.{member}")
    return entries


def module_page(name, entries):
    """The page of module ``name`` (``tf_vrre.sgmcmc.schedules``): its docstring, a table of its
    members, and the entries of the members described here (``entries``: :func:`canonical_names`;
    a member without one is described on the first page that lists it)."""
    module = importlib.import_module(name)
    lines = _heading(name, "=") + [f".. automodule:: {name}", "   :no-members:", ""]
    members = module_members(module)
    if members:
        lines += [f".. currentmodule:: {name}", "", ".. autosummary::", "   :nosignatures:", ""]
        own = [m for m in members if entries.setdefault(id(getattr(module, m)), f"{name}.{m}") == f"{name}.{m}"]
        links = {m: entries[id(getattr(module, m))] for m in members if m not in own}
        links = {m: t[len(name) + 1 :] if t.startswith(name + ".") else t for m, t in links.items()}  # autosummary
        lines += [f"   {m}" if m in own else f"   ~{links[m]}" for m in members] + [""]  # wants these relative
        for m in own:
            directive = "autoclass" if inspect.isclass(getattr(module, m)) else "autofunction"
            lines += [f".. {directive}:: {m}", ""]
    return "\n".join(lines)


def cli_page():
    """``tf-vrre <command> --help`` of every subcommand, captured from the parser itself."""
    import contextlib
    import io

    from tf_vrre import cli

    os.environ["COLUMNS"] = "90"  # argparse wraps help at the terminal width: 88 columns fit the page
    lines = _heading("Command line", "=") + [
        "``tf-vrre --help`` and ``tf-vrre <command> --help`` of every subcommand (the same text the",
        "console prints; ``python -m tf_vrre.cli`` is the same command).",
        "",
    ]
    for name in ("", *cli.SUBCOMMANDS):  # "": tf-vrre --help (the subcommands, --version)
        text = io.StringIO()
        with contextlib.redirect_stdout(text), contextlib.suppress(SystemExit):
            cli.parser().parse_args([name, "--help"] if name else ["--help"])
        lines += _heading(f"tf-vrre {name}".strip(), "-") + [".. code-block:: text", ""]
        lines += [f"   {line}".rstrip() for line in text.getvalue().splitlines()] + [""]
    return "\n".join(lines)


def write(app=None):
    objects, modules = public_names(), public_modules()
    os.makedirs(OUT, exist_ok=True)
    stale = {f for f in os.listdir(OUT) if f.startswith("tf_vrre.") and f.endswith(".rst")}
    _write(os.path.join(OUT, "index.rst"), index_page(objects, modules))
    _write(os.path.join(OUT, "cli.rst"), cli_page())
    entries = canonical_names(objects, modules)
    for name in modules:
        _write(os.path.join(OUT, f"{name}.rst"), module_page(name, entries))
        stale.discard(f"{name}.rst")
    for page in stale:  # pages of modules that no longer exist (a source tree built before)
        os.remove(os.path.join(OUT, page))


def class_signature(app, what, name, obj, options, signature, return_annotation):
    """``autodoc-process-signature``: a tf_vrre class built on Keras, whose signature autodoc reads
    as ``(*args, **kwargs)`` (Keras' ``__new__``, which every Keras class inherits), gets its
    ``__init__``'s parameters (names and defaults; their types are listed below the header)."""
    if what != "class" or signature not in ("(*args, **kwargs)", None) or not inspect.isclass(obj):
        return None
    mro = inspect.getmro(obj)
    init = next((cls for cls in mro if "__init__" in vars(cls)), object)
    if not init.__module__.startswith("tf_vrre") or not any(c.__module__.startswith("keras") for c in mro):
        return None
    from sphinx.util import inspect as sphinx_inspect

    sig = sphinx_inspect.signature(obj.__init__, bound_method=True)
    return sphinx_inspect.stringify_signature(sig, show_annotation=False), return_annotation


def fields_before_examples(app, what, name, obj, options, lines):
    """``autodoc-process-docstring``, after sphinx-autodoc-typehints: it appends the ``:param:``,
    ``:type:`` and ``:rtype:`` fields it adds after napoleon's ``.. rubric:: Example`` (which
    would show a parameter's type below the example and end the field list); they go back
    before the rubric, with the docstring's own fields."""
    rubric = next((i for i, line in enumerate(lines) if line.startswith(".. rubric::")), None)
    if rubric is None:
        return
    moved, rest, i = [], lines[:rubric], rubric
    while i < len(lines):
        if lines[i].startswith((":param ", ":type ", ":rtype:")):
            moved.append(lines[i])
            i += 1
            while i < len(lines) and lines[i].startswith(" ") and lines[i].strip():
                moved.append(lines[i])  # the field's continuation lines
                i += 1
        else:
            rest.append(lines[i])
            i += 1
    if moved:
        while rest[rubric - 1 : rubric] == [""] and rubric > 0:  # the fields join the field list above
            rest.pop(rubric - 1)
            rubric -= 1
        lines[:] = rest[:rubric] + ([""] if rubric else []) + moved + [""] + rest[rubric:]


def library_members_only(app, what, name, obj, skip, options):
    """``autodoc-skip-member``: on a class page (which lists inherited members too), skip the
    methods and properties defined outside tf_vrre (Keras' ``fit``, ``quantize``, ...; a tuple's
    ``count``), so a class shows what tf_vrre defines for it, including what its tf_vrre mixins
    give it (the sampler's ``set_temperatures``, ``make_dataset``, ...)."""
    if what != "class" or skip:
        return None
    target = getattr(obj, "fget", None) or getattr(obj, "__func__", None) or obj
    if not (callable(target) or isinstance(obj, property)):
        return None  # attributes: the class's own (autodoc lists no inherited plain values from Keras)
    module = getattr(target, "__module__", None)
    return None if isinstance(module, str) and module.startswith("tf_vrre") else True
