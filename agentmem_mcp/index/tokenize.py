"""Text -> search terms, shared by the index, the query side and the relevance check.

Python splits what tantivy's tokenizers cannot (code identifiers, paths, dotted names, CJK), and hands
tantivy a space-separated string that its analyzer lowercases, filters for stop words and stems.
`parseConfig` -> `parseconfig parse config`; `src/app_main.py` -> `src app main appmain py`;
`配置文件` -> `配 置 文 件`.
"""

from __future__ import annotations

import re

ANALYZER_NAME = "agentmem"

_CJK = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # Han
    "\U00020000-\U0002ebef"
)
_WORD = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+(?:_+[^\W_{_CJK}]+)*", re.UNICODE)
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
MAX_TERM_LEN = 40
# English function words, including the question and request words that prompts are full of.
STOPWORDS = sorted(set("""
a about above after again against all am an and any are as at be because been before being below between both
but by can could did do does doing done down during each else few for from further get got had has have having
he her here hers herself him himself his how i if in into is it its itself just let lets me more most my myself
no nor not now of off on once only or other our ours ourselves out over own please same she should so some such
than that the their theirs them themselves then there these they this those through to too under until up us
very was we were what when where which while who whom why will with would you your yours yourself yourselves
""".split()))

# Function words of other languages (German, French, Spanish, Italian, Portuguese, Dutch) and Chinese/Japanese
# particles: shared with a memory, they say nothing about what a prompt is about (prompt recall leaves them out;
# the index keeps them).
FUNCTION_WORDS = frozenset("""
der die das den dem des ein eine einen einem einer eines und oder aber ist sind war waren wird werden wurde bin
bist sein hat haben hatte ich du er sie es wir ihr mir mich dir dich uns euch ihm ihn ihnen mein dein sein unser
im in am an auf aus bei mit nach von vor zu zum zur für über unter durch gegen ohne um als wie wo was wer wann
warum welche welcher welches noch schon auch nur nicht kein keine keinen so dann denn doch mal ja nein bitte
le la les un une des du de et ou mais est sont était être avoir il elle ils elles nous vous je tu me te se ce
cette ces mon ton son notre votre leur dans sur sous avec pour par pas plus que qui quoi où quand comment
el los las uno una unos unas y o pero es son era ser estar está están yo él ella nosotros ellos mi tu su en con
por para sin sobre qué quién dónde cuándo cómo muy más
il lo gli uno una e o ma è sono era essere io lui lei noi voi loro mio tuo suo nel nella con per tra fra che chi
dove quando come molto più
o os as um uma e ou mas é são era ser eu ele ela nós eles meu seu no na com por para sem que quem onde quando
como muito mais
de het een en of maar is zijn was ik jij hij zij wij jullie mijn jouw zijn ons in op aan met voor van naar
wat wie waar wanneer hoe waarom niet geen ook nog al wel
の は を が に で と も た て し い な か へ や から まで より です ます これ それ あれ この その
的 了 是 在 我 你 他 她 它 这 那 吗 呢 吧 和 与 也 都 就 有 不 个 们
""".split())

_STAMP = re.compile(r"\A\s*\[[^\]\n]{1,60}\]\s*")  # a leading "[2023-05-20 14:02]" transcript stamp


def without_stamp(text: str) -> str:
    """The text without a leading timestamp in brackets, stripped."""
    return _STAMP.sub("", text.strip(), count=1).strip()


def terms(text: str) -> list[str]:
    """Split text into lowercased terms: every CJK character, identifier parts and joined identifiers."""
    out: list[str] = []
    append = out.append
    for word in _WORD.findall(text):
        # most words are one term: a plain word, a number, a non-ASCII word (the slow path below finds
        # the same; indexing spends most of its time here)
        if "_" not in word and (not word.isascii() or word.isdigit() or word.isalpha() and (
                word.islower() or word.isupper() or word[1:].islower())):
            lowered = word.lower()
            if len(lowered) <= MAX_TERM_LEN:
                append(lowered)
            continue
        chunks = word.split("_")
        parts = [p for chunk in chunks for p in (_CAMEL.findall(chunk) if chunk.isascii() else [chunk])]
        lowered_parts = [p.lower() for p in parts if p]
        out.extend(p for p in lowered_parts if len(p) <= MAX_TERM_LEN)
        if len(lowered_parts) > 1:
            joined = "".join(lowered_parts)
            if len(joined) <= MAX_TERM_LEN:
                append(joined)
    return out


def index_text(text: str) -> str:
    """The string to give the tantivy field whose analyzer is `ANALYZER_NAME`."""
    return " ".join(terms(text))


def build_analyzer():  # -> tantivy.TextAnalyzer
    import tantivy

    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace())
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.remove_long(MAX_TERM_LEN + 1))
        .filter(tantivy.Filter.custom_stopword(STOPWORDS))
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )
