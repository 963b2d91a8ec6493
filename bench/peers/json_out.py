"""JSON files the peer scripts write (paired.json, sgemm*.json, env.json's peer_torch):
whole or not at all — a temporary file beside the target, then os.replace, so a reader
or a crash never sees half a file."""

import json
import os


def write_json(path, doc):
    tmp = f"{path}.tmp.{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
