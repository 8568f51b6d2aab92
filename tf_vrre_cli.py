"""Console entry point of ``tf-vrre``: flags are parsed and validated before TensorFlow loads.

``import tf_vrre`` imports TensorFlow (its modules register Keras classes on import, which
``keras.saving.load_model`` needs).  Importing TensorFlow prints C++ start-up lines on
stderr, so a command line that must answer a bad flag with exactly one line cannot import
the package first.  This module sits outside the package: it asks ``tf_vrre/__init__.py``
to defer its imports (:data:`DEFER_PACKAGE_IMPORTS`) while ``tf_vrre.cli`` parses and checks
the flags; :func:`tf_vrre.cli.main` completes the package import before the subcommand runs.

    tf-vrre mixture --iterations 2000        # the console script calls main()
    python -m tf_vrre_cli mixture --help     # the same without the script
"""

import sys

DEFER_PACKAGE_IMPORTS = False
"""True only while :func:`main` imports ``tf_vrre.cli`` (read by ``tf_vrre/__init__.py``)."""


def main(argv=None):
    """Runs ``tf-vrre`` with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    global DEFER_PACKAGE_IMPORTS
    DEFER_PACKAGE_IMPORTS = True
    try:
        from tf_vrre import cli
    finally:
        DEFER_PACKAGE_IMPORTS = False
    return cli.main(argv)


if __name__ == "__main__":  # under its own name, so that tf_vrre/__init__.py finds the flag
    import tf_vrre_cli

    sys.exit(tf_vrre_cli.main())
