"""Every knob of search's ranking in one object, each with its default.

The ones a user may set come from `config.Settings` (config.toml or AGENTMEM_*; their defaults and meaning
are in config.py's settings table and the README); the others are fixed here.

| knob | default | what it does |
| --- | --- | --- |
| fusion | `score` (setting) | `score`: scores divided by each retriever's best, weighted; `rrf`: rank fusion |
| weight_bm25 / weight_vector / weight_graph | 0.4 / 0.6 / 0.3 (settings) | each retriever's weight in the fusion |
| soft_match_weight | 0.5 (setting) | share of a keyword match a similar word earns (score fusion) |
| keyword_complete | (0.2, 0.6) | BM25's weight shrinks when its best hit scores under 0.6 of a full match... |
| vector_stands_out | (0.02, 0.12) | ... and the vectors' best cosine stands out (`ranking.keyword_trust`) |
| expansion_weight | 1.0 (setting) | BM25 boost of a near vocabulary word per unit of cosine (index/expansion.py) |
| expansion_from / expansion_per_word | 0.5 / 3 | the cosine from which a word is near; how many one query word brings |
| rrf_k | 60 (setting) | the k of reciprocal rank fusion |
| min_score | 0.01 (setting `search_min_score`) | hits scoring under this are left out |
| retriever_depth | 60 | how many candidates each retriever returns |
| pending_scan | 200 | memories queued for BM25 that search scans itself; past it, the indexer thread applies them |
| rerank_per_hit / rerank_floor | 4 / 40 | how many fused candidates are reranked: max(limit x 4, 40) |
| time_window_boost | 2.0 | a memory from the time the query names ("yesterday", "3 weeks ago") weighs this much more |
| procedure_boost | 1.3 (`ranking.PROCEDURE_BOOST`) | a how-to question weighs procedures (workflows) this much more |
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config import Settings
from .ranking import PROCEDURE_BOOST


@dataclass(frozen=True)
class RankingSettings:
    """The knobs of one search (see the module's table)."""

    fusion: str
    weight_bm25: float
    weight_vector: float
    weight_graph: float
    soft_match_weight: float
    rrf_k: int
    min_score: float
    retriever_depth: int = 60
    pending_scan: int = 200
    rerank_per_hit: int = 4
    rerank_floor: int = 40
    keyword_complete: tuple[float, float] = (0.2, 0.6)
    vector_stands_out: tuple[float, float] = (0.02, 0.12)
    expansion_weight: float = 1.0  # the setting's default: `from_settings` sets it
    expansion_from: float = 0.5
    expansion_per_word: int = 3
    time_window_boost: float = 2.0
    procedure_boost: float = PROCEDURE_BOOST

    @classmethod
    def from_settings(cls, settings: Settings) -> RankingSettings:
        """The knobs with the user's settings."""
        return cls(fusion=settings.fusion, weight_bm25=settings.weight_bm25, weight_vector=settings.weight_vector,
                   weight_graph=settings.weight_graph, soft_match_weight=settings.soft_match_weight,
                   expansion_weight=settings.expansion_weight, rrf_k=settings.rrf_k,
                   min_score=settings.search_min_score)

    @property
    def weights(self) -> dict[str, float]:
        """Each retriever's weight in the fusion."""
        return {"bm25": self.weight_bm25, "vector": self.weight_vector, "graph": self.weight_graph}

    def reranked(self, limit: int) -> int:
        """How many fused candidates are joined against SQLite and reranked for an answer of `limit` hits."""
        return max(limit * self.rerank_per_hit, self.rerank_floor)
