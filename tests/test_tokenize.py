"""Text -> search terms (index/tokenize.py): identifiers, paths, CJK, and the fast path for plain words."""

from __future__ import annotations

import random

from agentmem_mcp.index.tokenize import _CAMEL, _WORD, MAX_TERM_LEN, index_text, terms, without_stamp


def reference_terms(text: str) -> list[str]:
    """The rule written plainly, word by word, without the fast path: the output `terms` must keep."""
    out: list[str] = []
    for word in _WORD.findall(text):
        parts = [p for chunk in word.split("_") for p in (_CAMEL.findall(chunk) if chunk.isascii() else [chunk])]
        lowered = [p.lower() for p in parts if p]
        out.extend(p for p in lowered if len(p) <= MAX_TERM_LEN)
        if len(lowered) > 1 and len(joined := "".join(lowered)) <= MAX_TERM_LEN:
            out.append(joined)
    return out


def test_identifiers_paths_and_cjk():
    assert terms("parseConfig") == ["parse", "config", "parseconfig"]
    assert terms("src/app_main.py") == ["src", "app", "main", "appmain", "py"]
    assert terms("配置文件") == ["配", "置", "文", "件"]
    assert terms("XMLHttpRequest v2") == ["xml", "http", "request", "xmlhttprequest", "v", "2", "v2"]
    assert terms("HTTP Server 404 café Straße") == ["http", "server", "404", "café", "straße"]
    assert index_text("Use uv, not pip") == "use uv not pip"


def test_over_long_terms_are_dropped_but_their_parts_kept():
    long_word = "a" * (MAX_TERM_LEN + 1)
    assert terms(long_word) == []
    assert terms(f"{'x' * 30}_{'y' * 30}") == ["x" * 30, "y" * 30]  # joined: 60 characters, dropped


def test_fast_path_matches_the_plain_rule_on_random_text():
    rng = random.Random(7)
    alphabet = "aZ_9 é配İ.ǅ-ßΣXMLhttpRequestﬁ\n"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 80))) for _ in range(5000)]
    texts += ["Caroline: I went to a LGBTQ support group yesterday (8 May, 2023)!", "İstanbul ǅemal ﬁle ΣΑΣ"]
    for text in texts:
        assert terms(text) == reference_terms(text), text


def test_without_stamp():
    assert without_stamp("[2023-05-20 14:02] Fixed the build") == "Fixed the build"
    assert without_stamp("  [1:56 pm on 8 May, 2023] Caroline: hi ") == "Caroline: hi"
    assert without_stamp("no stamp [here]") == "no stamp [here]"
