"""Files the peer scripts write (paired.json, sgemm*.json, env.json's peer_torch,
perf_summary.md): whole or not at all — a temporary file beside the target, then
os.replace, so a reader or a crash (a full disk, a signal) never sees half a file and
the previous version stays until the new one is complete."""

import json
import os


def write_text(path, text):
    tmp = f"{path}.tmp.{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_json(path, doc):
    write_text(path, json.dumps(doc, indent=2) + "\n")
