"""``python -m tf_vrre.cli ...`` is ``tf-vrre ...``.

(This path imports the ``tf_vrre`` package, and so TensorFlow, before parsing; the ``tf-vrre``
script and ``python -m tf_vrre_cli`` check the flags first.)
"""

from tf_vrre.cli import main

raise SystemExit(main())
