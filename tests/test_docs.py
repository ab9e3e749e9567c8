"""Docs that cannot rot (issue 48, item 4): every fenced shell command of README.md and docs/**/*.md runs in a safe
form, and every relative link resolves; tests/docs_check/ says how each kind of command is checked (its __init__.py)
and which command words are not run, and why (its commands.py). Planted breaks, on synthetic markdown in a temporary
directory, show that a broken command and a broken link fail. Each test prints what it checked, by kind."""

import textwrap

import docs_check as dc
import pytest
from support import ROOT

pytestmark = pytest.mark.costly  # about a minute of a core (plans, --help runs): scheduled first (tests/conftest.py)

DOCS = dc.markdown_files(ROOT)


def show(capsys, title, text):
    """Printed past pytest's capture, for the closing note (with -n 0; a pytest-xdist worker's output is dropped)."""
    with capsys.disabled():
        print(f"\n[{title}] {text}")


def fail_on(results):
    """Fails with each failure's file, line, command or link, and why (pytest's repr of the results left out)."""
    if dc.failures(results):
        pytest.fail(dc.format_failures(results), pytrace=False)


@pytest.fixture(scope="module")
def documented():
    return [cmd for md in DOCS for cmd in dc.extract_commands(md)]


def test_the_documents_are_read(documented):
    assert ROOT / "README.md" in DOCS
    assert any(cmd.kind == "snakemake" for cmd in documented) and any(cmd.kind != "snakemake" for cmd in documented)


def test_every_documented_command_but_snakemake_runs_in_its_safe_form(documented, capsys):
    results = [dc.check(cmd) for cmd in documented if cmd.kind != "snakemake"]
    show(capsys, "commands, snakemake aside", dc.summary(results) + f"; {sum(r.seconds for r in results):.0f} s")
    fail_on(results)


def test_every_documented_snakemake_command_plans_as_a_dry_run(documented, tmp_path_factory, capsys):
    dry_runs = dc.DryRuns(tmp_path_factory.mktemp("docs_dry_runs"))
    results = [dc.check(cmd, dry_runs) for cmd in documented if cmd.kind == "snakemake"]
    show(capsys, "snakemake commands", dc.summary(results, dry_runs))
    fail_on(results)


def test_every_relative_link_resolves(capsys):
    results = [r for md in DOCS for r in dc.check_links(md)]
    show(capsys, "links", dc.summary(results))
    fail_on(results)


# ---- planted breaks ----------------------------------------------------------------------------------------------


def planted(tmp_path, text, name="planted.md"):
    md = tmp_path / name
    md.parent.mkdir(parents=True, exist_ok=True)
    md.write_text(textwrap.dedent(text))
    return md


def test_planted_broken_commands_fail(tmp_path, capsys):
    """A snakemake target that does not exist (a mini-scale dry run) and a module that does not exist fail; beside
    them, a target and a module that exist pass."""
    md = planted(
        tmp_path,
        """\
        # Planted

        ```bash
        snakemake --cores 1 results/no/such/target.txt
        python -m entropy_rl.no_such_module --flag
        snakemake --cores 1 results/audit/audit.md
        python -m entropy_rl.study.audit.compare A.csv B.csv
        ```
        """,
    )
    dry_runs = dc.DryRuns(tmp_path / "runs")
    results = [dc.check(cmd, dry_runs) for cmd in dc.extract_commands(md)]
    show(capsys, "planted broken commands", dc.format_failures(results))
    assert [(r.command.line, r.kind, r.ok) for r in results] == [
        (4, "snakemake dry run", False),
        (5, "python -m --help", False),
        (6, "snakemake dry run", True),
        (7, "python -m --help", True),
    ]
    assert "MissingRuleException" in results[0].reason and "results/no/such/target.txt" in results[0].reason
    assert "No module named 'entropy_rl.no_such_module'" in results[1].reason
    report = dc.format_failures(results)
    assert "planted.md:4: $ snakemake --cores 1 results/no/such/target.txt" in report
    assert "planted.md:5: $ python -m entropy_rl.no_such_module --flag" in report


def test_planted_broken_links_fail(tmp_path, capsys):
    """A missing file and a missing anchor fail; links that resolve (a file, a directory, an anchor by GitHub's
    slug, a duplicate heading's -1, an <a id>, a reference-style link, an image) pass; external ones are skipped."""
    planted(tmp_path, '# Other\n\n## Set-up: `fit-law`, step 1!\n\n<a id="explicit"></a>\n', "docs/other.md")
    planted(tmp_path, "png", "docs/figure.png")
    md = planted(
        tmp_path,
        """\
        # Title

        ## Usage
        ## Usage

        See [the other page](other.md), [its set-up](other.md#set-up-fit-law-step-1),
        [an explicit anchor](other.md#explicit), [the second Usage](#usage-1), [the folder](../docs/),
        [a reference][ref] and ![a figure](figure.png), [the web](https://example.org/x#y) and
        [mail](mailto:someone@example.org). `[not a link](nowhere.md)` is code.

        Broken: [a missing file](no_such_page.md) and [a missing anchor](other.md#no-such-heading),
        [a missing image](missing.png), [an undefined reference][nope].

        [ref]: other.md#set-up-fit-law-step-1
        """,
        "docs/page.md",
    )
    results = dc.check_links(md, root=tmp_path)
    report = dc.format_failures(results)
    show(capsys, "planted broken links", report)
    assert [(r.link.line, r.ok) for r in results if r.ok is not True] == [
        (8, None),
        (9, None),
        (11, False),
        (11, False),
        (12, False),
        (12, False),
    ]
    assert "docs/page.md:11: [link] no_such_page.md: no file or directory" in report
    assert "no heading or id 'no-such-heading' in" in report
    assert "missing.png: no file or directory" in report and "[nope]: no definition of its label" in report
    assert sum(r.ok is True for r in results) == 7


# ---- the parts, on synthetic markdown --------------------------------------------------------------------------


def test_github_slugs():
    text = textwrap.dedent("""\
        # The law on any run's log: `fit-law`
        ## Power sampling beside RL
        ## Power sampling beside RL
        ## Power sampling beside RL
        ### Café & crème — 2025 (v1.2)?
        ## **Bold** and _emphasis_ with `snake_case` and [a link](x.md)
        ```bash
        # not a heading
        ```
        Setext heading
        ==============
        <a name="kept-name"></a>
        """)
    assert dc.anchors("x.md", text) == [
        "the-law-on-any-runs-log-fit-law",
        "power-sampling-beside-rl",
        "power-sampling-beside-rl-1",
        "power-sampling-beside-rl-2",
        "café--crème--2025-v12",
        "bold-and-emphasis-with-snake_case-and-a-link",
        "setext-heading",
        "kept-name",
    ]


def test_shell_blocks_are_read_as_a_shell_would():
    text = textwrap.dedent("""\
        ```console
        $ pip install -r envs/mini.txt \\
            -c envs/tests.txt  # a comment
        Successfully installed
        $ pytest tests/test_docs.py
        ```

        ```python
        print("not shell")
        ```

        - In a list:
          ```sh
          # a comment line
          HF_TOKEN=x snakemake -n all && python -m entropy_rl.x --out 'a b' > log.txt; ls results/
          ```
        """)
    found = [(c.line, c.kind, c.env, c.argv) for c in dc.extract_commands(ROOT / "x.md", text=text)]
    assert found == [
        (2, "install", {}, ["pip", "install", "-r", "envs/mini.txt", "-c", "envs/tests.txt"]),
        (5, "pytest", {}, ["pytest", "tests/test_docs.py"]),
        (15, "snakemake", {"HF_TOKEN": "x"}, ["snakemake", "-n", "all"]),
        (15, "python -m", {}, ["python", "-m", "entropy_rl.x", "--out", "a b"]),
        (15, "not run", {}, ["ls", "results/"]),
    ]


def check_all(text):
    return [dc.check(cmd) for cmd in dc.extract_commands(ROOT / "x.md", text=f"```bash\n{text}\n```\n")]


def test_install_lines_pytest_and_scripts_check_the_files_they_name():
    ok = check_all(
        textwrap.dedent("""\
        python3 -m venv .venv2 && . .venv2/bin/activate && pip install --no-deps --require-hashes \\
          --extra-index-url https://download.pytorch.org/whl/cpu -r envs/mini.txt && pip install --no-deps -e .
        bash envs/install-tests.sh
        pytest tests/test_docs.py::test_github_slugs tests/workflow
        python benchmarks/study_time.py --help
        """)
    )
    assert [r.ok for r in ok] == [True] * 7, dc.format_failures(ok)
    broken = check_all(
        textwrap.dedent("""\
        pip install -r envs/no_such.txt -c envs/no_such_constraints.txt
        source .venv3/bin/activate
        bash envs/install-nothing.sh
        pytest tests/no_such_test.py tests/test_docs.py::test_no_such_test
        python benchmarks/no_such_benchmark.py --samples 10
        cd no_such_directory
        """)
    )
    report = dc.format_failures(broken)
    assert [r.ok for r in broken] == [False] * 6, report
    for expected in (
        "no requirements file envs/no_such.txt",
        "no constraints file envs/no_such_constraints.txt",
        "no file to source .venv3/bin/activate",
        "no install script envs/install-nothing.sh",
        "no test path tests/no_such_test.py",
        "tests/test_docs.py defines no test_no_such_test",
        "no script benchmarks/no_such_benchmark.py",
        "no directory no_such_directory",
    ):
        assert expected in report, report


def test_an_unknown_command_word_fails_and_a_listed_one_checks_its_paths():
    results = check_all(
        textwrap.dedent("""\
        frobnicate --all
        apptainer build containers/images/train.sif containers/train.def
        apptainer build containers/images/train.sif containers/no_such.def
        sbatch slurm/config.yaml
        python -c 'print(1)'
        git clone https://github.com/example/entropy-rl.git && cd entropy-rl && ls results/ workflow/rules
        cd .. && ls anything
        """)
    )
    verdicts = [(r.command.argv[0], r.ok) for r in results]
    assert verdicts == [
        ("frobnicate", False),
        ("apptainer", True),
        ("apptainer", False),
        ("sbatch", True),
        ("python", False),
        ("git", True),
        ("cd", True),
        ("ls", True),
        ("cd", None),
        ("ls", None),
    ]
    assert "command word 'frobnicate' is not classified" in results[0].reason
    assert "no file containers/no_such.def" in results[2].reason
