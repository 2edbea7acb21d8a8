"""What the docs show of the kit is the kit: an example of a command's output is that command's real
output, and every total they quote is the registry's."""
import re
import shutil

import pytest

from autograder.cli import main
from autograder.curriculum import STAGES
from autograder.grading.config import CourseConfig
from autograder.grading.registry import all_checks, max_points
from autograder.common.markers import solved

# The slip of docs/instructors/grade.md's partly done submission: the causal mask the wrong way round
# (tril, hiding the past and showing the future), in both places stage 3 builds one.
WRONG_WAY_ROUND = '''

def causal_weights_by_fill(attn_scores, d_k):
    n = attn_scores.shape[-1]
    hidden = torch.tril(torch.ones(n, n, dtype=torch.bool, device=attn_scores.device), diagonal=-1)
    return torch.softmax(attn_scores.masked_fill(hidden, -torch.inf) / d_k ** 0.5, dim=-1)


class CausalAttention(CausalAttention):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, qkv_bias)
        self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length), diagonal=-1))
'''


def example(doc: str, command: str) -> str:
    """The output printed under ``$ command`` in a fenced block of ``doc``."""
    block = re.search(r"```\n\$ " + re.escape(command) + r"\n(.*?)```", doc, re.S)
    assert block, f"no example of `{command}` in the docs"
    return block.group(1)


def documented_stages(root) -> list[int]:
    """The stages the docs show: those of the example of ``grade`` (docs/instructors/grade.md), the kit's own.
    A stage an instructor adds (docs/instructors/new-stage.md) is not among them, and the docs stay true."""
    shown = example((root / "docs" / "instructors" / "grade.md").read_text(), "attention-lab grade partly")
    return [int(n) for n in re.findall(r"^Stage\s+(\d+) ", shown, re.M)]


def seconds_apart(text: str) -> str:
    return re.sub(r"graded in \d+\.\d s", "graded in T s", text)


@pytest.fixture
def partly(tmp_path, root):
    """Stages 1 and 2 done, stage 3 with its mask the wrong way round, the rest untouched stubs."""
    folder = tmp_path / "partly"
    shutil.copytree(root / "assignments" / "attention_lab", folder / "attention_lab")
    for module in ("simple", "self_attention", "causal"):
        code = solved((root / "solutions" / "attention_lab" / f"{module}.py").read_text())
        (folder / "attention_lab" / f"{module}.py").write_text(code + (WRONG_WAY_ROUND if module == "causal" else ""))
    return folder


def test_the_example_of_grade_is_its_real_output(partly, root, monkeypatch, capsys):
    monkeypatch.chdir(partly.parent)
    monkeypatch.delenv("ATTENTION_LAB_CONFIG", raising=False)
    # What devices this machine lacks is said once, and differs from machine to machine: not part of the example.
    monkeypatch.setattr("autograder.grading.grade.missing_devices_note", lambda checks, devices: "")
    documented = documented_stages(root)
    assert set(documented) <= set(STAGES) and documented == sorted(documented)
    # the stages the example shows, as `grade partly` grades them where they are the whole curriculum
    monkeypatch.setattr("autograder.grading.config.load_config",
                        lambda *args, **kwargs: CourseConfig(stages=tuple(documented)))
    assert main(["grade", "partly"]) == 0
    out, err = capsys.readouterr()
    shown = example((root / "docs" / "instructors" / "grade.md").read_text(), "attention-lab grade partly")
    said = [line for line in err.splitlines() if line.startswith(("course configuration", "grading "))]
    assert seconds_apart(shown) == seconds_apart("\n".join(said) + "\n" + out), (
        "docs/instructors/grade.md's example is not what `attention-lab grade partly` prints; now it prints:\n"
        + "\n".join(said) + "\n" + out)


def test_every_total_the_docs_quote_is_the_registrys(root):
    """"N/M points" or "M points in K checks" of the whole kit (the stages the docs show), wherever the docs say it."""
    documented = documented_stages(root)
    total, checks = sum(max_points(s) for s in documented), len([c for c in all_checks() if c.stage in documented])
    texts = {p: p.read_text() for p in [root / "README.md", *sorted((root / "docs").rglob("*.md"))]}
    for path, text in texts.items():
        for quoted in re.findall(r"\d+/(\d+) points, \d+/(\d+) checks", text):
            assert quoted == (str(total), str(checks)), f"{path.name} quotes {quoted}, the kit has {total}, {checks}"
    assert f"/{total} points, " in texts[root / "docs" / "instructors" / "grade.md"]


def test_the_nbgrader_doc_names_every_stages_notebook(root):
    from autograder.authoring.course import notebook_name

    text = (root / "docs" / "instructors" / "nbgrader.md").read_text()
    first, *_, last = documented_stages(root)
    assert f"`{notebook_name(STAGES[first])}.ipynb` ... `{notebook_name(STAGES[last])}.ipynb`" in text


def test_each_commands_help_says_which_stages_it_grades_by_default(capsys):
    for command in (["grade"], ["grade-all"], ["export", "gradescope"]):
        with pytest.raises(SystemExit):
            main([*command, "--help"])
        said = " ".join(capsys.readouterr().out.split())
        assert "default: the stages the course configuration teaches, every stage without one" in said, command
