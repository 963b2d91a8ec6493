"""README's "Environment variables" table against the code: every TB_* variable the code
reads from the environment (C++ getenv, Python os.environ, shell ${TB_...}) is in the table,
and every variable in the table is read somewhere, so neither drifts. The test doubles'
variables (TB_FAKE_*, TB_TRACE_FILE, install-deps' TB_APT_*) are left to their tests.
Run as: python3 -m pytest -q tests/ci
"""

import os
import re

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# Where users' variables are read: the harness, kernels and data, the benchmarks and peers,
# the reports, the make and CI entry points.
SOURCES = ["harness", "kernels", "datasets", "bench", "reports", ".ci", "cmake", "Makefile", "CMakeLists.txt"]
TEST_DOUBLES = re.compile(r"TB_(FAKE_\w+|TRACE_FILE|APT_\w+)$")
CPP = re.compile(r'getenv\("(TB_\w+)"\)')
PYTHON = re.compile(r'environ(?:\.get\(|\[)\s*"(TB_\w+)"')
SHELL = re.compile(r'\$\{(TB_\w+)(?::?[-=}])')               # ${TB_X:-...}, ${TB_X}
MAKE = re.compile(r'\$\((TB_\w+)\)')                        # $(TB_X): make's environment
CMAKE = re.compile(r'\$ENV\{(TB_\w+)\}')                     # CMake's ${X} is its own variable


def _patterns(path):
    name = os.path.basename(path)
    if name.endswith((".cpp", ".h", ".cu", ".cuh")):
        return [CPP]
    if name.endswith(".py"):
        return [PYTHON]
    if name == "Makefile":
        return [MAKE, SHELL]
    if name.endswith(".cmake") or name == "CMakeLists.txt":
        return [CMAKE]
    return [SHELL]  # .sh and the extension-less .ci scripts


def _files():
    for top in SOURCES:
        path = os.path.join(REPO, top)
        if os.path.isfile(path):
            yield path
            continue
        for folder, _, names in os.walk(path):
            for n in names:
                if n.endswith((".cpp", ".h", ".cu", ".cuh", ".py", ".sh", ".cmake")) or n == "CMakeLists.txt" \
                        or "." not in n:
                    yield os.path.join(folder, n)


def read_by_code():
    found = set()
    for path in _files():
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, OSError):
            continue
        for pattern in _patterns(path):
            found |= {v for v in pattern.findall(text) if not TEST_DOUBLES.match(v)}
    return found


def readme_table():
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        text = f.read()
    table = text[text.index("### Environment variables"):text.index("## Backends")]
    names = set()
    for first_cell in re.findall(r"^\| ([^|]+) \|", table, re.M):
        names |= set(re.findall(r"`(TB_\w+)`", first_cell))
    return names


def test_every_variable_the_code_reads_is_in_the_readme_table():
    missing = read_by_code() - readme_table()
    assert not missing, f"TB_* variables read by the code but not in README's table: {sorted(missing)}"


def test_every_variable_in_the_readme_table_is_read_by_the_code():
    stale = readme_table() - read_by_code()
    assert not stale, f"README's table names variables the code does not read: {sorted(stale)}"
