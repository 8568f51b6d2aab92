"""The TF Serving version an export writes: never one whose name is already taken (no TensorFlow)."""

import os

import pytest

from tf_vrre.serving import checks


def test_a_file_or_link_named_like_a_version_is_passed_over_and_named(tmp_path):
    """A file ``2`` and a dangling link ``3`` beside version ``1``: the default version is 4 (was 2,
    then refused as having 'appeared during the export'); asking for 2 or 3 names what is there."""
    out = tmp_path / "serving"
    (out / "1").mkdir(parents=True)
    (out / "2").write_text("notes")
    os.symlink(str(tmp_path / "nowhere"), out / "3")
    assert checks.versions(str(out)) == [1]
    assert checks.choose_version(str(out), None) == 4
    with pytest.raises(
        ValueError,
        match=r"version 2 already exists in .* \(as a file, not an exported version\).*"
        r"e\.g\. 4",
    ):
        checks.choose_version(str(out), 2)
    with pytest.raises(ValueError, match=r"version 3 already exists .*as a symbolic link"):
        checks.choose_version(str(out), 3)
    with pytest.raises(ValueError, match=r"version 1 already exists in .* \(versions there: \[1\]\)"):
        checks.choose_version(str(out), 1)
    assert checks.choose_version(str(out), 7) == 7
