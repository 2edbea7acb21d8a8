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
    ({"points": {"stage\u00b2": 3}}, "neither a check id"),  # a digit int() refuses: str.isdigit says yes
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
    ({"stages": [1, 2, 3, 4, 9]}, "stage 9 (frontier.py) builds on stage 8 (modern.py), which the course neither "
                                  "teaches nor gives"),
    ({"stages": [1, 2, 3, 4, 9]}, "Add 8 to stages to teach it, or to given (given = [8])"),
    ({"stages": [1, 4]}, "stage 4 (multihead.py) builds on stage 3 (causal.py)"),
    ({"stages": [1, 2], "given": [8]}, "given names stage 8, which no stage taught builds on"),
    ({"stages": [8, 9], "given": [8]}, "stage 8 is both in stages"),
    ({"stages": [9], "given": [8, 3]}, "given names stage 3"),
    ({"stages": [9], "given": 8}, "given must be a list"),
    ({"stages": [9], "given": [max(STAGES) + 1]}, "given must be a list"),  # a stage the curriculum has not
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


def test_a_stage_given_lets_a_course_teach_what_builds_on_it():
    config = from_data({"stages": [9, 1, 2, 3, 4], "given": [8]})
    assert config.stages == (1, 2, 3, 4, 9) and config.given == (8,)
    assert {c.stage for c in config.checks()} == {1, 2, 3, 4, 9}  # a given stage is not graded
    assert config.given_modules() == ["modern"] and config.given_modules({1, 2}) == []
    assert "(given: 8)" in from_data(config.as_data(), "course/attention-lab.toml").describe()
    assert from_data(config.as_data()) == config  # what the Gradescope zip ships reads back the same
    assert "given" not in CourseConfig().as_data()


def test_the_given_code_is_the_references_and_says_it_is_given(root):
    from autograder.grading.config import GIVEN_MARK, given_code
    from autograder.common.markers import solved

    config = from_data({"stages": [1, 2, 3, 4, 9], "given": [8]})
    (code,) = given_code(config).values()
    header, _, rest = code.partition('"""')
    assert header.startswith(GIVEN_MARK) and "stage 8 is not taught" in header and "stage(s) 9" in header
    assert '"""' + rest == solved((root / "solutions" / "attention_lab" / "modern.py").read_text())
    assert given_code(config, stages={1}) == {}


def test_teaching_other_stages_keeps_the_given_stages_they_need():
    config = from_data({"stages": [1, 2, 3, 4, 9], "given": [8], "points": {"stage1": 5}})
    assert config.teaching([9]).given == (8,) and config.teaching([9]).max_points(1) == 5
    assert config.teaching([1, 3]).given == ()
    assert config.teaching([8, 9]).given == ()
    with pytest.raises(UsageError, match="stage 4 .* builds on stage 3"):
        config.teaching([4])


@pytest.mark.parametrize("points, says", [
    ({"stage4": 30, "s4.mha.structure": 9}, ["sets stage4 = 30 and also s4.mha.structure = 9",
                                             "stage 4 is worth", "not 30"]),
    ({"stage3": 2}, ["check(s) of stage 3 end at 0 points", "stage3 = 2 shared among its"]),
    ({"s1.softmax_naive": 0}, ["1 check(s) of stage 1 end at 0 points", "set to 0 by [points]: s1.softmax_naive"]),
])
def test_what_would_surprise_an_instructor_is_a_warning_not_an_error(points, says):
    config = from_data({"points": points})
    warned = " ".join(config.warnings)
    assert all(s in warned for s in says), config.warnings
    assert not from_data({"points": {"stage4": 30, "s1.softmax_naive": 3}}).warnings


def test_a_checks_points_on_top_of_a_total_that_still_adds_up_is_said_too():
    share = from_data({"points": {"stage4": 30}}).points.get("s4.mha.structure") or \
        registry()["s4.mha.structure"].points
    config = from_data({"points": {"stage4": 30, "s4.mha.structure": share}})
    assert config.max_points(4) == 30
    assert config.warnings == (f"[points] sets stage4 = 30 and also s4.mha.structure = {share}: a check named on its "
                               "own keeps its points on top of the others' shares of stage4, so stage 4 still comes to "
                               "30 points",)


def test_config_check_prints_the_table_and_the_warnings_and_refuses_what_grading_would(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(ENV, raising=False)
    (tmp_path / FILE).write_text('stages = [1, 2, 3, 4, 9]\ngiven = [8]\n[points]\nstage4 = 30\n'
                                 '"s4.mha.structure" = 9\n"s1.scores" = 0\n')
    assert main(["config", "check"]) == 0
    out, err = capsys.readouterr()
    config = load_config()
    assert f"course configuration: {tmp_path / FILE}" in out
    assert "stages taught: 1, 2, 3, 4, 9" in out and "given: stage 8 (modern.py)" in out and "stage 9" in out
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith("  s")}
    assert {k: int(v[0]) for k, v in rows.items()} == {c.id: c.points for c in config.checks()}
    assert rows["s1.scores"] == ["0", "(registry:", f"{registry()['s1.scores'].points})"]
    assert not [k for k in rows if k.startswith("s8.")]
    assert f"course total: {config.max_points()} points in {len(config.checks())} checks" in out
    assert len(config.warnings) == 2 and all(w in out for w in config.warnings)
    assert [line for line in err.splitlines() if "warning:" in line] == \
        [f"attention-lab: warning: {w}" for w in config.warnings]  # once, on stderr
    (tmp_path / FILE).write_text("stages = [1, 9]\n")
    assert main(["config", "check"]) == 2
    out, err = capsys.readouterr()
    assert not out and "builds on stage 8" in err and "given = [8]" in err
    assert main(["config", "check", "--config", str(tmp_path / "missing.toml")]) == 2
    (tmp_path / "plain.toml").write_text("stages = [1]\n")
    assert main(["config", "check", "--config", str(tmp_path / "plain.toml")]) == 0
    out = capsys.readouterr().out
    assert "given: none" in out and "warnings: none" in out


def test_a_refused_gradescope_stage_choice_is_said_before_anything_is_written(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(ENV, raising=False)
    (tmp_path / FILE).write_text("stages = [1, 2, 3, 4, 9]\ngiven = [8]\n")
    assert main(["export", "gradescope", "--out", "a.zip", "--stage", "4"]) == 2
    assert "stage 4 (multihead.py) builds on stage 3" in capsys.readouterr().err and not (tmp_path / "a.zip").exists()
    assert main(["export", "gradescope", "--out", "a.zip", "--stage", "9"]) == 0
    assert "leaderboard none (stage 8, whose speed it shows, is not graded)" in capsys.readouterr().err
    with zipfile.ZipFile(tmp_path / "a.zip") as z:
        assert json.loads(z.read("kit/gradescope.json"))["given"] == [8] and "kit/given/modern.py" in z.namelist()
    assert main(["export", "gradescope", "--out", "b.zip", "--stage", "1"]) == 0
    with zipfile.ZipFile(tmp_path / "b.zip") as z:
        assert "given" not in json.loads(z.read("kit/gradescope.json"))
        assert not [n for n in z.namelist() if n.startswith("kit/given/")]


def test_the_line_a_command_says_first_stays_short_and_verbose_lists_every_check_set():
    """A stage's total sets the points of each of its checks: the first line on stderr once listed them all
    (915 characters for every stage's total); now it counts them, and --verbose lists them."""
    config = from_data({"points": {f"stage{n}": 10 * n for n in STAGES}}, "course/attention-lab.toml")
    line, verbose = config.describe(), config.describe(verbose=True)
    assert "\n" not in line and len(line) < 200, line
    assert f"points of {len(config.points)} check(s) set (attention-lab config check lists them)" in line
    assert all(f"{k} {v}" in verbose for k, v in config.points.items()) and len(verbose) > 500


def test_grade_verbose_prints_every_check_whose_points_the_file_set(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(ENV, raising=False)
    (tmp_path / FILE).write_text("stages = [1]\n[points]\nstage1 = 30\n")
    assert main(["grade", str(tmp_path / "nothing"), "--verbose"]) == 2  # refused after the line is said
    first = capsys.readouterr().err.splitlines()[0]
    assert all(f"{k} {v}" in first for k, v in load_config().points.items())


def test_points_of_a_stage_not_taught_are_a_warning_whether_a_check_or_the_total():
    config = from_data({"stages": [1, 2, 3, 4, 9], "given": [8], "points": {"stage7": 10, "s8.gqa.as_mha": 5}})
    assert config.warnings == ("[points] sets s8.gqa.as_mha, a check of stage 8, which is given, not taught: it "
                               "changes nothing", "[points] sets stage7, the total of stage 7, which is not taught: "
                               "it changes nothing")
    assert config.max_points() == from_data({"stages": [1, 2, 3, 4, 9], "given": [8]}).max_points()
    assert "points of" not in from_data(config.as_data(), "c.toml").describe()  # nothing counted that changes nothing
