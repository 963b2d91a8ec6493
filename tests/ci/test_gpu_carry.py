""".ci/gpu-carry.sh: packages taken as .deb files to a GPU machine without apt.

`env` is tested offline with two hand-made .deb files (dpkg-deb --build): they are
unpacked under PREFIX, never over /, and the printed exports put PREFIX's programs,
libraries and CMake packages first. `list` names only packages apt knows here, so
`fetch` cannot fail on a typo. Run as: python3 -m pytest -q tests/ci
"""

import os
import shutil
import subprocess

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(REPO, ".ci", "gpu-carry.sh")

need_dpkg = pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="dpkg-deb not found (not Debian/Ubuntu)")


def run(*args, **kw):
    return subprocess.run(["bash", SCRIPT, *args], capture_output=True, text=True, **kw)


def make_deb(folder, name, files):
    """A minimal binary package NAME holding FILES ({relative path: text})."""
    root = os.path.join(folder, "src-" + name)
    os.makedirs(os.path.join(root, "DEBIAN"))
    with open(os.path.join(root, "DEBIAN", "control"), "w") as f:
        f.write(f"Package: {name}\nVersion: 1.0\nArchitecture: all\nMaintainer: t <t@t>\nDescription: test\n")
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        if rel.startswith("usr/bin/"):
            os.chmod(path, 0o755)
    out = os.path.join(folder, "debs", name + ".deb")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    subprocess.run(["dpkg-deb", "--build", root, out], check=True, capture_output=True)
    return out


@need_dpkg
def test_env_unpacks_under_prefix_and_puts_it_first(tmp_path):
    make_deb(str(tmp_path), "tbtool", {"usr/bin/tb-carried-tool": "#!/bin/sh\necho carried-tool-ran\n"})
    make_deb(str(tmp_path), "tblib", {
        "usr/lib/x86_64-linux-gnu/libtbcarried.so.1": "not really a library",
        "usr/lib/x86_64-linux-gnu/cmake/TbCarried/TbCarriedConfig.cmake": "set(TbCarried_FOUND TRUE)\n",
    })
    prefix = tmp_path / "prefix"
    r = run("env", str(tmp_path / "debs"), str(prefix))
    assert r.returncode == 0, r.stderr
    assert (prefix / "usr/bin/tb-carried-tool").exists()
    # The exports, evaluated by a shell, reach the carried program and name the prefix.
    script = r.stdout + "\ntb-carried-tool\necho \"LD=$LD_LIBRARY_PATH\"\necho \"CMP=$CMAKE_PREFIX_PATH\"\necho \"OPAL=$OPAL_PREFIX\"\n"
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "carried-tool-ran" in lines
    usr = str(prefix / "usr")
    assert f"LD={usr}/lib/x86_64-linux-gnu:{usr}/lib/x86_64-linux-gnu/openmpi/lib" in lines
    assert f"CMP={usr}" in lines
    assert f"OPAL={usr}" in lines
    assert "export TB_SKIP_DEPS=1" in r.stdout


@need_dpkg
@pytest.mark.parametrize("prefix", ["/", "/usr", "/usr/local"])
def test_env_refuses_system_prefixes(tmp_path, prefix):
    make_deb(str(tmp_path), "tbtool", {"usr/bin/x": "#!/bin/sh\n"})
    r = run("env", str(tmp_path / "debs"), prefix)
    assert r.returncode == 2
    assert "would unpack over the system" in r.stderr
    assert r.stdout == "false\n"  # for eval: see test_env_failure_fails_the_callers_eval


@need_dpkg
def test_env_without_a_multiarch_library_folder_says_so_and_fails(tmp_path):
    # Packages that unpack no usr/lib/<arch>-linux-gnu/ (fetched elsewhere, or the wrong ones):
    # exports without the library folder would send make gpu-check to apt; say so instead.
    make_deb(str(tmp_path), "tbtool", {"usr/bin/tb-carried-tool": "#!/bin/sh\n"})
    r = run("env", str(tmp_path / "debs"), str(tmp_path / "prefix"))
    assert r.returncode == 2
    assert "-linux-gnu/ after unpacking" in r.stderr and "Debian 12" in r.stderr
    assert r.stdout == "false\n"


def test_env_without_debs_says_how_to_get_them(tmp_path):
    r = run("env", str(tmp_path / "empty"), str(tmp_path / "p"))
    assert r.returncode == 2
    assert "fetch" in r.stderr and r.stdout == "false\n"


def test_env_failure_fails_the_callers_eval(tmp_path):
    # eval of an empty string succeeds: the README's `eval "$(.ci/gpu-carry.sh env)" && make
    # gpu-check` went on without the packages. The printed `false` makes eval fail.
    script = f'eval "$(bash {SCRIPT} env {tmp_path / "empty"} {tmp_path / "p"})" && echo went-on; echo "rc=$?"'
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
    assert "went-on" not in out.stdout
    assert "rc=1" in out.stdout, out.stdout + out.stderr


def test_unknown_verb_is_usage_error():
    r = run("unpack-everything")
    assert r.returncode == 2 and r.stderr.startswith("usage:")


@pytest.mark.skipif(shutil.which("apt-cache") is None, reason="apt-cache not found (not Debian/Ubuntu)")
def test_every_listed_package_is_known_to_apt():
    names = run("list").stdout.split()
    assert "libopenmpi3" in names and "libgtest-dev" in names
    # libc and the C++ runtime must never travel: unpacked, they would shadow the machine's.
    assert not {"libc6", "libstdc++6", "libgcc-s1"} & set(names)
    # One query for all; it exits 0 if any name is known, so compare the names it shows.
    out = subprocess.run(["apt-cache", "show", "--no-all-versions", *names], capture_output=True, text=True).stdout
    shown = {line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Package:")}
    assert not set(names) - shown, f"apt does not know: {sorted(set(names) - shown)}"


def test_fetch_downloads_every_package_and_keeps_the_folder_out_of_git(tmp_path):
    """fetch, with a stand-in apt-get that records what it is asked for, in a fresh
    repository without .git/info/ (git init may leave none): the folder is excluded."""
    fakebin = tmp_path / "bin"
    fakebin.mkdir()
    (fakebin / "apt-get").write_text('#!/bin/sh\n[ "$1" = download ] || exit 9\nshift\n'
                                     'for p in "$@"; do : > "$p.deb"; done\necho "$@" > asked.txt\n')
    (fakebin / "apt-get").chmod(0o755)
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    info = repo / ".git" / "info"
    shutil.rmtree(info, ignore_errors=True)
    env = dict(os.environ, PATH=f"{fakebin}:{os.environ['PATH']}")
    r = subprocess.run(["bash", SCRIPT, "fetch"], cwd=repo, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    names = run("list").stdout.split()
    assert (repo / ".gpu-carry" / "asked.txt").read_text().split() == names
    assert (info / "exclude").read_text().splitlines() == ["/.gpu-carry/"]
    st = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True)
    assert st.stdout == ""          # nothing of .gpu-carry/ shows as untracked
    # A second fetch does not add the line again.
    subprocess.run(["bash", SCRIPT, "fetch"], cwd=repo, env=env, capture_output=True, check=True)
    assert (info / "exclude").read_text().splitlines() == ["/.gpu-carry/"]
