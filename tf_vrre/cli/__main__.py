"""``python -m tf_vrre.cli ...`` is ``tf-vrre ...``."""

from tf_vrre.cli import main

raise SystemExit(main())
