"""Sphinx configuration of the tf_vrre documentation (MyST Markdown prose, autodoc API, notebooks).

Build: ``make docs`` or ``sphinx-build -W --keep-going -b html docs docs/_build/html``.
No page fetches anything from the network: notebooks are rendered with the outputs they hold
(``nb_execution_mode = "off"``) and external links are not checked.
"""

import os
import sys
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import api_pages  # noqa: E402  (docs/api_pages.py: the API reference from tf_vrre.__all__)

# sphinx-autodoc-typehints 3.x calls a Sphinx API that Sphinx 10 removes: not ours to fix, not a build warning
warnings.filterwarnings("ignore", message=".*set_application.* is deprecated", module="sphinx_autodoc_typehints.*")

project = "tf_vrre"
author = "tf_vrre contributors"
copyright = "tf_vrre contributors, Apache-2.0"
release = api_pages.version()

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx_autodoc_typehints",  # after napoleon: parameter types from the type hints
    "sphinx.ext.viewcode",  # a "[source]" link on every documented object, to a highlighted copy of its module
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # MathJax served from _static/mathjax: formulas render without a network
    "sphinx_copybutton",
]

# sources: Markdown (MyST) pages, notebooks (copied from colab/ into docs/notebooks at build time: a
# symbolic link would not survive a Windows checkout), generated API pages
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "jupyter_execute"]
root_doc = "index"

# MyST: anchors for every heading up to level 3, so [text](page.md#a-heading) links are checked
myst_heading_anchors = 3
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
suppress_warnings = ["myst.header"]  # notebooks start at "#" and may skip levels in prose cells

# notebooks: render what is stored in the file, never execute (they need data and minutes)
nb_execution_mode = "off"
nb_merge_streams = True

# API reference: autodoc + napoleon (Google style "Args:"), pages written by api_pages.py. A class
# page shows the members tf_vrre defines for it, its own and its tf_vrre mixins'
# (_templates/autosummary/class.rst, api_pages.library_members_only); what it inherits from Keras
# is behind the "Bases:" line, as on Keras' own pages.
templates_path = ["_templates"]
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_inherit_docstrings = False
# sphinx-autodoc-typehints: the types of the signature go into the parameter list, the header
# keeps the names and defaults
typehints_document_rtype = True
typehints_use_signature = False
always_document_param_types = True  # a hinted parameter gets its type even where the docstring does not list it
napoleon_google_docstring = True
napoleon_numpy_docstring = False
# the docstrings list the fields of state containers and named tuples under "Fields:"
napoleon_custom_sections = [("Fields", "params_style"), ("Fields (variables)", "params_style")]
add_module_names = False

html_theme = "furo"
html_title = f"tf_vrre {release}"
html_static_path = ["_static"]
html_css_files = ["site.css"]  # code blocks scroll sideways, never wrap (_static/site.css)

# the copy button leaves out prompts and the output of ">>>" examples
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True
copybutton_only_copy_prompt_lines = False

# External links are never fetched (the build runs offline); internal links and anchors are
# checked by MyST while reading (a missing page or heading is a warning, an error under -W).
linkcheck_ignore = [r"https?://.*"]


def _copy_notebooks():
    """colab/*.ipynb and colab/README.md -> docs/notebooks/ (build output, not tracked)."""
    import shutil

    src, dst = os.path.join(ROOT, "colab"), os.path.join(ROOT, "docs", "notebooks")
    os.makedirs(dst, exist_ok=True)
    for name in sorted(os.listdir(src)):
        if name.endswith(".ipynb"):
            shutil.copyfile(os.path.join(src, name), os.path.join(dst, name))
    with open(os.path.join(src, "README.md")) as f:  # its links into docs/, seen from docs/notebooks/
        text = f.read().replace("](../docs/", "](../")
    with open(os.path.join(dst, "README.md"), "w") as f:
        f.write(text)


_copy_notebooks()
api_pages.write()  # before autosummary looks for its stubs


def setup(app):
    # Keras' Model.__new__(*args, **kwargs) would be the header of every Keras class: show __init__'s
    app.connect("autodoc-process-signature", api_pages.class_signature, priority=400)
    app.connect("autodoc-process-docstring", api_pages.fields_before_examples, priority=900)
    app.connect("autodoc-skip-member", api_pages.library_members_only)
