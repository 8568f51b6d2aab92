"""End-to-end workflows built on the sampler: the paper's Gaussian-mixture study
(:mod:`.gaussian_mixture`) and image classification (:mod:`.image_classification`)."""
