"""The README's code runs, and the demo runs end to end."""

import re
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]


def readme_python_blocks():
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_readme_has_the_two_setup_commands():
    text = (ROOT / "README.md").read_text()
    assert "make demo" in text and "make test" in text


def test_readme_code_blocks_run_in_order(capsys):
    # later blocks continue from the names defined by earlier ones, as a reader would
    namespace = {"__name__": "__readme__"}
    for index, code in enumerate(readme_python_blocks()):
        exec(compile(code, f"README.md block {index}", "exec"), namespace)
    assert "Traceback" not in capsys.readouterr().out


def test_readme_has_a_quick_start_that_prints_the_bound(capsys):
    blocks = readme_python_blocks()
    assert blocks, "README must contain a python quick start"
    exec(compile(blocks[0], "README quick start", "exec"), {"__name__": "__readme__"})
    assert "lower_bound_" in blocks[0]
    assert re.search(r"-?\d+\.\d+", capsys.readouterr().out)


def test_demo_runs_from_the_command_line():
    proc = subprocess.run(
        [sys.executable, "-m", "sklearn_vb", "demo"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert "chosen by VB" in proc.stdout
    assert "first fit" in proc.stdout and "later fit" in proc.stdout
    assert "demo finished" in proc.stdout


def test_demo_rejects_unknown_sections():
    proc = subprocess.run(
        [sys.executable, "-m", "sklearn_vb", "demo", "--only", "nonsense"],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )
    assert proc.returncode != 0
    assert "unknown demo section" in proc.stderr
