"""Image classification (``tf-vrre train`` / ``evaluate``): method configs (:mod:`.config`,
``configs/*.toml``), data (:mod:`.data`), the model zoo (:mod:`.models`), training
(:mod:`.train`), evaluation (:mod:`.evaluate`, :mod:`.metrics`, :mod:`.plots`) and
distribution strategies (:mod:`.strategies`)."""
