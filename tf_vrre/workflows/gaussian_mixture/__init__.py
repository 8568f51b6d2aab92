"""The paper's 1-D Gaussian-mixture target with its exact posterior (:mod:`.target`) and figures
(:mod:`.plots`)."""
