"""Vectors that saving does not wait for, added afterwards: memories saved before the model was ready (or under
another model), and the sentence pieces, answer chunks and word vectors the worker's passes embed."""

from __future__ import annotations

import json
from collections.abc import Callable

from ..db import memories as memory_rows
from ..db import memory_reads, word_vectors
from ..db import vectors as vector_rows
from ..db.connection import Connection
from ..db.database import Database
from . import neighbours, vectors, words
from .document import memory_text
from .embedder import Embedder


class VectorBackfill:
    """Embeds what lacks vectors in `db` with `embedder`; `word_matrix` is the word vectors this process's
    searches have met (emptied when the vector table is made again for another model)."""

    def __init__(self, db: Database, embedder: Embedder, word_matrix: words.WordMatrix) -> None:
        self.db = db
        self.embedder = embedder
        self.word_matrix = word_matrix

    def prepare(self) -> None:
        """Once the model is ready: make sure the vector table matches it and embed what lacks vectors."""
        if not self.embedder.ready:
            return
        with self.db.transaction() as conn:
            self.ensure_table(conn)
        self.embed_pending()

    def ensure_table(self, conn: Connection) -> bool:
        """`db/vectors.ensure_table` for the embedder's model (inside the caller's transaction); when it makes
        the table again, the word vectors this process's searches have met go with the stored ones."""
        made = vector_rows.ensure_table(conn, self.embedder.model_id, self.embedder.dimension or 384)
        if made:
            self.word_matrix.clear()  # word_vectors.reset emptied the table: another model's vectors
        return made

    def embed_pending(self, batch: int = 64, progress: Callable[[int, int], None] | None = None) -> int:
        """Give vectors to memories saved before the model was ready (or after a model change)."""
        if not self.embedder.ready:
            return 0
        model_id = self.embedder.model_id
        total = memory_rows.unembedded(self.db.conn)
        done = 0
        while True:
            rows = memory_reads.unembedded_rows(self.db.conn, batch)
            if not rows:
                return done
            prepared = []
            for row in rows:
                memory = dict(row)
                chunks = vectors.chunk_text(memory_text(memory["title"], memory["content"],
                                                        json.loads(memory["tags"]), json.loads(memory["files"]),
                                                        for_vectors=True))
                prepared.append((memory, chunks))
            flat = [chunk for _, chunks in prepared for chunk in chunks]
            embedded = self.embedder.embed(flat) or []
            with self.db.transaction() as conn:
                offset = 0
                for memory, chunks in prepared:
                    vecs = embedded[offset:offset + len(chunks)]
                    offset += len(chunks)
                    if not memory_reads.exists(conn, memory["id"]):
                        continue
                    vector_rows.put(conn, memory["id"], memory["project"], bool(memory["is_latest"]), chunks, vecs)
                    memory_rows.set_embedded(conn, memory["id"], model_id)
            done += len(rows)
            if progress:
                progress(done, total)

    def add_sentence_pieces(self, limit: int = 500) -> int:
        """Embed the sentence pieces (index/vectors.py) and the answer chunk (index/neighbours.py) of up to
        `limit` memories that have vectors but have not been looked at for them yet: saving does not wait for
        them, the worker's passes do this. Returns how many memories were looked at (0: none is left)."""
        if not self.embedder.ready:
            return 0
        rows = memory_reads.pieces_todo(self.db.conn, self.embedder.model_id, limit)
        if not rows:
            return 0
        # the rules' own knowledge (a command, a fix) is a sentence or two found by its words: no pieces
        found = [(r, vectors.summary_pieces(r["content"]) if r["type"] == "summary"
                  else [] if r["source"] == "consolidation" and r["tier"] != "episodic" else vectors.memory_pieces(
                      memory_text(r["title"], r["content"], json.loads(r["tags"]), json.loads(r["files"]),
                                  for_vectors=True), r["content"]),
                  neighbours.answer_chunk(self.db.conn, r)) for r in rows]
        texts = [t for _, pieces, answer in found for t in (*pieces, *([answer] if answer else []))]
        embedded = self.embedder.embed(texts) if texts else []
        if embedded is None or len(embedded) != len(texts):  # the model failed: these wait for the next call
            return 0
        with self.db.transaction() as conn:
            offset = 0
            for row, pieces, answer in found:
                vecs = embedded[offset:offset + len(pieces)]
                answer_vector = embedded[offset + len(pieces)] if answer else None
                offset += len(pieces) + (1 if answer else 0)
                # a memory re-embedded or forgotten meanwhile is looked at again or not at all
                now = memory_reads.pieces_still_todo(conn, row["id"], self.embedder.model_id)
                if now:
                    vector_rows.put_pieces(conn, row["id"], pieces, vecs)
                    vector_rows.put_answer(conn, row["id"], now["project"], bool(now["is_latest"]), answer,
                                           answer_vector)
        return len(rows)

    def add_word_vectors(self, limit: int = 500) -> int:
        """Embed the words (index/words.py) of up to `limit` memories that have vectors but whose words have not
        been counted yet, the new words only; the worker's passes do this. Returns how many memories were
        looked at (0: none is left)."""
        if not self.embedder.ready:
            return 0
        rows = memory_reads.words_todo(self.db.conn, self.embedder.model_id, limit)
        if not rows:
            return 0
        found = {r["id"]: words.memory_words(r["title"], r["content"]) for r in rows}
        every = list(dict.fromkeys(w for ws in found.values() for w in ws))
        stored = word_vectors.lookup(self.db.conn, every)
        new = [w for w in every if w not in stored]
        embedded = self.embedder.embed(new) if new else []
        if embedded is None or len(embedded) != len(new):  # the model failed: these wait for the next call
            return 0
        with self.db.transaction() as conn:
            # a memory re-embedded or forgotten meanwhile is looked at again or not at all
            still = memory_reads.words_still_todo(conn, list(found), self.embedder.model_id)
            uses: dict[str, int] = {}
            for memory_id in still:
                for word in found[memory_id]:
                    uses[word] = uses.get(word, 0) + 1
            word_vectors.add(conn, uses, {w: words.pack(v) for w, v in zip(new, embedded)})
            memory_rows.set_words(conn, [(m, " ".join(found[m])) for m in still])
        return len(rows)
