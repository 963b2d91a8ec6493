"""The env.json fields the reports read, and the JSON type each must have.

Why: env.json is the run's provenance (which commit, clean or dirty, which GPUs); a
hand-edited one with "dirty": [1] or "run_id": 12345 raised deep inside the report (a
traceback), or worse was read as something it does not say. The names and types are
those harness/env_capture.cpp writes; null is accepted wherever the harness may write
it. Every other field is only shown, whatever its type.

Two kinds of problem:
  check(env)            provenance and identity (run_id, timestamp, git, build, host,
                        gpus, driver): the first wrong type, as one line for load.py to
                        refuse the file with (exit 2): a report must not state a
                        provenance it misread.
  ceilings_problem(env) the measured ceilings (harness/ceilings.cpp, optional): what is
                        wrong with them, or None; they are then ignored with a note (the
                        efficiency section says why), as when they were not measured.
"""

import json

STRING = ("a string", lambda v: isinstance(v, str))
INTEGER = ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool))
NUMBER = ("a number", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool))
BOOLEAN = ("true or false", lambda v: isinstance(v, bool))
OBJECT = ("an object", lambda v: isinstance(v, dict))
LIST = ("a list", lambda v: isinstance(v, list))

# (path, type): "a.b" is field b of object a; "a[]" every element of list a. A parent is
# listed before its fields, so a wrong parent is what gets named.
PROVENANCE = [
    ("timestamp", STRING), ("command_line", STRING),
    ("git", OBJECT), ("git.commit", STRING), ("git.dirty", BOOLEAN),
    ("build", OBJECT),
    *((f"build.{k}", STRING) for k in ("type", "compiler", "flags", "cuda_toolkit",
                                       "cuda_runtime", "cuda", "mpi", "nccl")),
    ("host", OBJECT),
    *((f"host.{k}", STRING) for k in ("hostname", "os", "kernel", "cpu_model")),
    ("host.logical_cores", INTEGER), ("host.memory_bytes", NUMBER),
    ("gpus", LIST), ("gpus[]", OBJECT), ("gpus[].name", STRING), ("gpus[].index", INTEGER),
    ("driver", STRING), ("gpu_unavailable_reason", STRING),
]
CEILINGS = [
    ("ceilings", OBJECT),
    *((f"ceilings.{k}", STRING) for k in ("host", "omitted", "gpu_reason")),
    ("ceilings.cpu", OBJECT), ("ceilings.cpu.threads", INTEGER), ("ceilings.cpu.isa", STRING),
    *((f"ceilings.cpu.{k}", NUMBER) for k in ("fma_gflops_1core", "fma_gflops_all",
                                              "triad_gbs_1core", "triad_gbs", "duration_s")),
    ("ceilings.gpus", LIST), ("ceilings.gpus[]", OBJECT), ("ceilings.gpus[].index", INTEGER),
    ("ceilings.gpus[].name", STRING), ("ceilings.gpus[].unavailable", STRING),
    *((f"ceilings.gpus[].{k}", NUMBER) for k in ("sgemm_gflops", "tf32_gflops", "d2d_gbs",
                                                 "duration_s")),
]


def _values(doc, path):
    """[(concrete path, value)] of every field `path` names in doc (none where a parent
    is absent or of another type: that parent's own entry reports it)."""
    found = [("", doc)]
    for part in path.split("."):
        each = part.endswith("[]")
        key = part[:-2] if each else part
        deeper = []
        for where, v in found:
            if not isinstance(v, dict) or key not in v:
                continue
            name = f"{where}.{key}" if where else key
            if not each:
                deeper.append((name, v[key]))
            elif isinstance(v[key], list):
                deeper += [(f"{name}[{i}]", x) for i, x in enumerate(v[key])]
        found = deeper
    return found


def _kind_of(v):
    if isinstance(v, bool):
        return "a boolean"
    for name, ok in (INTEGER, NUMBER, STRING, OBJECT, LIST):
        if ok(v):
            return name
    return "null"


def _short(v):
    """The value as the file spells it, cut to 40 characters."""
    text = json.dumps(v, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def first_problem(env, fields):
    """'git.dirty is a list ([1]), not true or false' for the first field of the wrong
    type (null is fine), or None."""
    for path, (expected, ok) in fields:
        for where, v in _values(env, path):
            if v is not None and not ok(v):
                return f"{where} is {_kind_of(v)} ({_short(v)}), not {expected}"
    return None


def check(env):
    """The problem with env.json's identity and provenance fields, or None. run_id is
    required: a non-empty string."""
    rid = env.get("run_id")
    if rid is None or rid == "":
        return "no run_id"
    if not isinstance(rid, str):
        return f"run_id is {_kind_of(rid)} ({_short(rid)}), not a string"
    return first_problem(env, PROVENANCE)


def ceilings_problem(env):
    """What is wrong with env.json's ceilings (None when they are absent or well formed)."""
    return first_problem(env, CEILINGS)
