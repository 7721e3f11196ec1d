"""kvq.write_file_atomic: the library's one atomic writer, which kvq.capture and the model
study write their files with. Checked against the file system itself."""
import os
import stat

import pytest

import kvq


def test_writes_and_replaces_without_leftovers(tmp_path):
    p = tmp_path / "out.csv"
    kvq.write_file_atomic(str(p), b"a,b\n1,2\n")
    assert p.read_bytes() == b"a,b\n1,2\n"
    kvq.write_file_atomic(str(p), b"x\n")
    assert p.read_bytes() == b"x\n"
    assert sorted(os.listdir(tmp_path)) == ["out.csv"]  # no temporary file left


def test_refuses_a_symbolic_link_and_leaves_its_target(tmp_path):
    target = tmp_path / "precious"
    target.write_bytes(b"keep")
    link = tmp_path / "out.json"
    link.symlink_to(target)
    with pytest.raises(ValueError, match="out.json"):
        kvq.write_file_atomic(str(link), b"{}")
    assert target.read_bytes() == b"keep" and link.is_symlink()


def test_refuses_a_directory(tmp_path):
    with pytest.raises(ValueError):
        kvq.write_file_atomic(str(tmp_path), b"x")


def test_device_is_written_directly_and_stays_a_device():
    kvq.write_file_atomic("/dev/null", b"discarded")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_failed_write_names_the_path():
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    with pytest.raises(RuntimeError, match="/dev/full"):
        kvq.write_file_atomic("/dev/full", b"x" * 65536)
