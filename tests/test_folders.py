"""A command that fails after creating its --out folder leaves no empty folder behind (seqlab.folders)."""
import pytest

from seqlab.folders import missing_folders, output_folder, remove_if_empty


def test_missing_folders_deepest_first(tmp_path):
    out = tmp_path / "a" / "b" / "c"
    assert missing_folders(out) == [out, out.parent, out.parent.parent]
    assert missing_folders(tmp_path) == []


def test_a_failure_removes_only_what_it_created_and_left_empty(tmp_path):
    out = tmp_path / "a" / "b"
    with pytest.raises(RuntimeError):
        with output_folder(out, lambda p: p.mkdir(parents=True)):
            assert out.is_dir()
            raise RuntimeError("fails")
    assert not (tmp_path / "a").exists() and tmp_path.is_dir()
    (tmp_path / "keep").mkdir()
    with pytest.raises(RuntimeError):
        with output_folder(tmp_path / "keep" / "x", lambda p: p.mkdir(parents=True)):
            (tmp_path / "keep" / "x" / "partial.txt").write_text("written before the failure")
            raise RuntimeError("fails")
    assert (tmp_path / "keep" / "x" / "partial.txt").exists()  # something was written: kept
    with output_folder(tmp_path / "ok", lambda p: p.mkdir()):
        pass
    assert (tmp_path / "ok").is_dir()  # success keeps it, even empty
    remove_if_empty([tmp_path / "missing"])  # nothing there: no error


def test_failed_train_and_attention_leave_no_out_folder(cli, tmp_path):
    code, _, err = cli("train", "sst2-transformer", "--out", tmp_path / "runs" / "x", "--data-dir", tmp_path)
    assert code == 1 and "not found" in err
    assert not (tmp_path / "runs").exists()
    code, _, err = cli("attention", "some text", "--model", tmp_path / "no-model", "--out", tmp_path / "att")
    assert code == 1 and err.startswith("error:")
    assert not (tmp_path / "att").exists()
