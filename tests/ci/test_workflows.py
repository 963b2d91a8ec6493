"""The GitHub workflows (.github/workflows/*.yml) are valid and point at things that exist.

Checked without GitHub: each file parses as YAML (python3-yaml), has triggers and jobs,
each job a runner and steps; every `uses:` is pinned; every `steps.<id>` an expression
names is a step of that job; every repository script or file a `run:` names exists,
and every `make TARGET` is a Makefile target. Run as: python3 -m pytest -q tests/ci
"""

import os
import re
import subprocess

import pytest

yaml = pytest.importorskip("yaml", reason="python3-yaml not installed (cmake/install-deps.sh installs it)")

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WORKFLOWS = os.path.join(REPO, ".github", "workflows")
FILES = sorted(f for f in os.listdir(WORKFLOWS) if f.endswith((".yml", ".yaml")))
# Top-level folders whose files a workflow may run or read (build/ and results/ are outputs).
SOURCE_DIRS = {".ci", ".github", "bench", "cmake", "datasets", "docs", "harness", "kernels", "reports", "tests"}


def load(name):
    with open(os.path.join(WORKFLOWS, name)) as f:
        return yaml.safe_load(f)


def makefile_targets():
    targets = set()
    with open(os.path.join(REPO, "Makefile")) as f:
        for line in f:
            m = re.match(r"^([A-Za-z0-9_.-]+)\s*:(?!=)", line)
            if m:
                targets.add(m.group(1))
    return targets


def steps_of(doc):
    for job_id, job in doc["jobs"].items():
        for step in job.get("steps", []):
            yield job_id, job, step


def test_both_workflows_are_here():
    assert {"ci.yml", "gpu.yml"} <= set(FILES), FILES


@pytest.mark.parametrize("name", FILES)
def test_parses_with_triggers_jobs_runners_and_steps(name):
    doc = load(name)
    assert isinstance(doc, dict) and doc.get("name"), f"{name}: no name"
    # YAML 1.1 reads the key `on` as True.
    triggers = doc.get("on", doc.get(True))
    assert triggers, f"{name}: no `on:` triggers"
    assert doc.get("jobs"), f"{name}: no jobs"
    for job_id, job in doc["jobs"].items():
        runs_on = job.get("runs-on")
        assert runs_on, f"{name}: job {job_id} has no runs-on"
        if isinstance(runs_on, str) and "${{" in runs_on:
            # One expression, the whole value: GitHub evaluates it to a label (or list).
            assert re.fullmatch(r"\$\{\{[^{}]+\}\}", runs_on.strip()), f"{name}: runs-on {runs_on!r}"
            assert re.search(r"\b(vars|inputs|matrix|github)\.", runs_on), f"{name}: runs-on {runs_on!r}"
        steps = job.get("steps")
        assert steps, f"{name}: job {job_id} has no steps"
        for step in steps:
            assert ("uses" in step) != ("run" in step), f"{name}: {job_id}: a step needs uses or run: {step}"


@pytest.mark.parametrize("name", FILES)
def test_actions_are_pinned(name):
    for job_id, _, step in steps_of(load(name)):
        if "uses" in step:
            assert re.fullmatch(r"[\w.-]+/[\w./-]+@[\w.-]+", step["uses"]), f"{name}: {job_id}: {step['uses']}"


@pytest.mark.parametrize("name", FILES)
def test_step_references_name_steps_of_the_job(name):
    doc = load(name)
    for job_id, job in doc["jobs"].items():
        ids = {s["id"] for s in job["steps"] if "id" in s}
        text = yaml.safe_dump(job)
        for ref in re.findall(r"steps\.([A-Za-z0-9_-]+)\.", text):
            assert ref in ids, f"{name}: {job_id} refers to steps.{ref}, its steps are {sorted(ids)}"


def run_scripts(name):
    for job_id, _, step in steps_of(load(name)):
        if "run" in step:
            # Continued lines joined; comments dropped (they may name things loosely).
            text = re.sub(r"\\\n", " ", step["run"])
            yield job_id, "\n".join(line.split(" #")[0] for line in text.splitlines()
                                    if not line.lstrip().startswith("#"))


@pytest.mark.parametrize("name", FILES)
def test_files_a_step_runs_exist(name):
    for job_id, script in run_scripts(name):
        for path in re.findall(r"(?<![\w./$-])((?:\.ci|\.github|[a-z]+)/[\w./-]*[\w-])", script):
            if path.split("/")[0] in SOURCE_DIRS and "$" not in path:
                assert os.path.exists(os.path.join(REPO, path)), f"{name}: {job_id}: {path} does not exist"


@pytest.mark.parametrize("name", FILES)
def test_make_targets_exist(name):
    targets = makefile_targets()
    for job_id, script in run_scripts(name):
        for words in re.findall(r"(?:^|[;&|(]|[ \t])make((?:[ \t]+[^\s;&|)]+)*)", script, re.M):
            for w in words.split():
                if w.startswith("-") or "=" in w:
                    continue
                assert w in targets, f"{name}: {job_id}: make {w}: no such Makefile target"


def test_ci_runs_the_ci_entry_point():
    scripts = " ".join(s for _, s in run_scripts("ci.yml"))
    assert ".ci/run" in scripts
    assert os.access(os.path.join(REPO, ".ci", "run"), os.X_OK) or "bash .ci/run" in scripts


def test_gpu_job_fails_a_cpu_only_build_and_keeps_the_report():
    doc = load("gpu.yml")
    job = next(iter(doc["jobs"].values()))
    text = yaml.safe_dump(doc)
    # The option CMakeLists.txt reads, set so that a build without nvcc fails the job.
    with open(os.path.join(REPO, "CMakeLists.txt")) as f:
        assert "TB_ENABLE_CUDA" in f.read()
    assert "-DTB_ENABLE_CUDA=ON" in text
    names = {s.get("name", ""): s for s in job["steps"]}
    compare = [s for n, s in names.items() if "ompare" in n]
    cond = str(compare[0].get("if", "")) if compare else ""
    # always() or !cancelled(): either makes the step run after a failed earlier step.
    assert compare and ("always()" in cond or "!cancelled()" in cond), "the compare step must run after a failure"
    uploads = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert any("report.html" in str(s.get("with", {}).get("path", "")) for s in uploads)


@pytest.mark.parametrize("name", FILES)
def test_run_steps_are_valid_bash(name):
    # GitHub substitutes ${{ ... }} before the shell sees the script; a placeholder here.
    for job_id, _, step in steps_of(load(name)):
        if "run" in step:
            script = re.sub(r"\$\{\{[^}]*\}\}", "X", step["run"])
            r = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
            assert r.returncode == 0, f"{name}: {job_id}: {step.get('name', step['run'][:40])}: {r.stderr}"


def test_the_mpich_stage_builds_every_program_an_mpi_test_launches():
    # .ci/run builds only the targets its MPICH tests need: a test whose program it does not
    # build fails there alone ("execvp error"), after the main build passed.
    with open(os.path.join(REPO, "tests", "CMakeLists.txt")) as f:
        cmake = f.read()
    launched = set(re.findall(r"\$\{MPIEXEC_EXECUTABLE\}[^)]*?\$<TARGET_FILE:(\w+)>", cmake, re.S))
    launched |= set(re.findall(r"^\s*tb_mpi_check\((\w+)", cmake, re.M))  # its function's calls
    assert {"tb_test_mpi_grad_reducer", "tb_test_mpi_job_sum"} <= launched, launched
    with open(os.path.join(REPO, ".ci", "run")) as f:
        ci = f.read()
    built = set()
    for m in re.finditer(r"\btargets\+?=\(([^)]*)\)", ci):
        built |= set(m.group(1).split())
    assert launched <= built, f"launched under mpiexec but not built by .ci/run: {sorted(launched - built)}"
