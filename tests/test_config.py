"""The course configuration (attention-lab.toml): what it sets, where it is found, what is refused,
and that the commands which grade or build for a platform read it and say so."""
import json
import zipfile

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autograder.cli import main
from autograder.curriculum import STAGES
from autograder.errors import UsageError
from autograder.grading.config import ENV, FILE, CourseConfig, from_data, load_config, shared
from autograder.grading.registry import VISIBLE, all_checks, max_points, registry


def test_the_default_is_every_stage_with_the_registrys_points():
    config = CourseConfig()
    assert config.stages == tuple(sorted(STAGES))
    assert config.max_points() == max_points()
    assert [(c.id, c.points, c.visibility) for c in config.checks()] == \
        [(c.id, c.points, c.visibility) for c in all_checks(set(STAGES))]


def test_stages_and_points_of_a_check_and_of_a_stage():
    config = from_data({"stages": [3, 1], "points": {"s1.softmax_naive": 5, "stage3": 30}})
    assert config.stages == (1, 3)
    assert {c.stage for c in config.checks()} == {1, 3}
    points = {c.id: c.points for c in config.checks()}
    assert points["s1.softmax_naive"] == 5
    assert config.max_points(3) == 30
    assert config.max_points(1) == max_points(1) - registry()["s1.softmax_naive"].points + 5


def test_a_checks_own_points_win_over_its_stages_share():
    config = from_data({"points": {"stage3": 30, "s3.causal.no_leak": 10}})
    points = {c.id: c.points for c in config.checks({3})}
    assert points["s3.causal.no_leak"] == 10


@given(st.dictionaries(st.text(min_size=1, max_size=3), st.integers(1, 9), min_size=1, max_size=12),
       st.integers(0, 500))
def test_a_shared_total_adds_up_exactly_and_follows_the_weights(weights, total):
    shares = shared(total, weights)
    assert sum(shares.values()) == total and set(shares) == set(weights)
    exact = {k: total * w / sum(weights.values()) for k, w in weights.items()}
    assert all(abs(shares[k] - exact[k]) < 1 for k in weights)


@pytest.mark.parametrize("data, says", [
    ({"stage": [1]}, "unknown setting"),
    ({"stages": [0, 1]}, "stages must be"),
    ({"stages": []}, "stages must be"),
    ({"points": {"s9.nothing": 3}}, "neither a check id"),
    ({"points": {"s1.softmax_naive": -1}}, "at least 0"),
    ({"points": {"s1.softmax_naive": 1.5}}, "whole number"),
    ({"gradescope": {"hidden": "never"}}, "after_published, after_due_date"),
    ({"gradescope": {"leader": True}}, "unknown [gradescope]"),
    ({"points": 3}, "are tables"),
    ({"gradescope": "abc"}, "are tables"),
    ({"gradescope": {"leaderboard": "no"}}, "true or false"),
    ({"stages": [1.0]}, "stages must be"),
    ({"stages": [True, 2]}, "stages must be"),
    ({"require_isolation": "yes"}, "require_isolation must be true or false"),
    ({"stages": [1, 2, 3, 4, 9]}, "stage 9 (frontier.py) builds on stage 8 (modern.py), which stages does not include"),
    ({"stages": [1, 4]}, "stage 4 (multihead.py) builds on stage 3 (causal.py)"),
    ({"stages": [1], "points": {"stage4": 30}}, "not among the stages taught"),
])
def test_a_mistake_in_the_file_is_named(data, says):
    with pytest.raises(UsageError) as exc:
        from_data(data, "course/attention-lab.toml")
    assert says in str(exc.value) and "course/attention-lab.toml" in str(exc.value)


def test_hidden_checks_visibility_is_the_courses_and_visible_ones_stay_visible():
    config = from_data({"gradescope": {"hidden": "after_due_date"}})
    seen = {c.visibility for c in config.checks()}
    assert seen == {VISIBLE, "after_due_date"}


def test_where_the_file_is_found(tmp_path, monkeypatch):
    course, elsewhere = tmp_path / "course", tmp_path / "elsewhere"
    course.mkdir(), elsewhere.mkdir()
    (course / FILE).write_text("stages = [1, 2]\n")
    (elsewhere / FILE).write_text("stages = [3]\n")
    monkeypatch.chdir(elsewhere)
    monkeypatch.delenv(ENV, raising=False)
    assert load_config(folder=course).stages == (1, 2)  # the course's own file first
    assert load_config().stages == (3,)  # else the working folder's
    monkeypatch.setenv(ENV, str(course / FILE))
    assert load_config(folder=elsewhere).stages == (1, 2)
    assert load_config(elsewhere / FILE).stages == (3,)  # an explicit path wins
    with pytest.raises(UsageError, match="no such course configuration"):
        load_config(tmp_path / "missing.toml")
    (elsewhere / FILE).write_text("stages = [1\n")
    with pytest.raises(UsageError, match="not a valid TOML file"):
        load_config(elsewhere / FILE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(ENV)
    assert load_config().path is None and "none" in load_config().describe()


def test_every_command_that_reads_it_says_what_it_used(tmp_path, monkeypatch, capsys):
    (tmp_path / FILE).write_text('stages = [1, 2]\n[points]\nstage1 = 20\n[gradescope]\nhidden = "after_due_date"\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(ENV, raising=False)
    assert main(["export", "gradescope", "--out", str(tmp_path / "autograder.zip")]) == 0
    said = capsys.readouterr().err
    assert f"course configuration: {tmp_path / FILE}: stage(s) 1, 2, {20 + max_points(2)} points" in said
    with zipfile.ZipFile(tmp_path / "autograder.zip") as z:
        shipped = json.loads(z.read("kit/gradescope.json"))
    assert shipped["stages"] == [1, 2] and shipped["gradescope"]["hidden"] == "after_due_date"
    assert from_data(shipped).max_points(1) == 20
    assert main(["nbgrader", "init", str(tmp_path / "course")]) == 0
    assert "course configuration:" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "course" / "source" / "attention").glob("*.ipynb")) == \
        ["stage1_simple.ipynb", "stage2_self_attention.ipynb"]
    (tmp_path / FILE).write_text("stages = [12]\n")
    assert main(["export", "classroom", "--out", str(tmp_path / "template")]) == 2
    assert "stages must be" in capsys.readouterr().err and not (tmp_path / "template").exists()


def test_the_gradescope_runner_needs_no_toml_reader(root):
    """The zip ships its configuration as JSON and may run on Python 3.10 without tomli."""
    import subprocess
    import sys

    code = ("import sys; sys.modules['tomllib'] = sys.modules['tomli'] = None\n"
            "from autograder.delivery import gradescope; print(gradescope.shipped_config().stages)")
    said = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert said.returncode == 0, said.stderr
