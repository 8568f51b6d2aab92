"""``python -m tf_vrre.cli ...`` is ``tf-vrre ...`` (the flags are checked before TensorFlow loads)."""

from tf_vrre.cli import main

raise SystemExit(main())
