"""`seqlab info PATH` on something that is not a run folder: one line that says what is wrong."""
from seqlab.cli.main import main


def test_info_on_a_file_says_it_is_not_a_folder(tmp_path, capsys):
    readme = tmp_path / "README.md"
    readme.write_text("# not a run\n")
    assert main(["info", str(readme)]) == 1
    err = capsys.readouterr().err
    assert err == f"error: {readme} is a file, not a run folder\n" and "does not exist" not in err


def test_info_on_a_missing_folder_says_it_does_not_exist(tmp_path, capsys):
    assert main(["info", str(tmp_path / "nosuch")]) == 1
    assert capsys.readouterr().err == f"error: run folder {tmp_path / 'nosuch'} does not exist\n"
