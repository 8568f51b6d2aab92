"""The files of a run, read and written without TensorFlow.

- :mod:`.run_json` - ``RUN/run.json`` and the run-directory layout;
- :mod:`.samples` - sample manifests and files (:func:`load_samples`, :class:`SampleSet`);
- :mod:`.ownership` - run identity and the lock of an output directory;
- :mod:`.fault_points` - named instants where the kill-at-any-instant tests stop a writer.
"""
