"""Similar words (index/words.py): the pure scoring, the word_vectors table the worker fills, and search."""

from __future__ import annotations

import numpy as np
import pytest

from agentmem_mcp.db import word_vectors
from agentmem_mcp.index import words
from agentmem_mcp.store import Store


def unit(*values: float) -> np.ndarray:
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def test_a_word_is_letters_only_and_not_a_stop_word():
    text = "[2023-05-20 14:02] I was in Chicago in 2019, commit 3fa9c2e, see src/app.py and the CI logs."
    assert words.text_words(text) == ["chicago", "commit", "see", "src", "app", "logs"]
    assert words.memory_words("Chicago trip", text)[:2] == ["chicago", "trip"]
    assert not words.is_word("x" * 25) and not words.is_word("py") and words.is_word("kickboxing")


def test_packed_vectors_keep_their_cosines():
    rng = np.random.default_rng(7)
    a, b = (unit(*rng.normal(size=384)) for _ in range(2))
    a_, b_ = words.unpack(words.pack(a)), words.unpack(words.pack(b))
    assert len(words.pack(a)) == 384
    assert float(a_ @ b_) == pytest.approx(float(a @ b), abs=0.01)
    assert float(a_ @ a_) == pytest.approx(1.0, abs=1e-5)


def test_soft_scores_take_the_closest_other_word_above_the_threshold():
    cities, chicago, city, weekend = unit(1, 0, 0), unit(0.7, 0.714, 0), unit(0.95, 0.31, 0), unit(0.1, 0, 0.99)
    vectors = {"cities": cities, "chicago": chicago, "city": city, "weekend": weekend}
    found = words.soft_scores(
        ["cities"], [cities], [2.0],
        {"trip": ["chicago", "awesome"], "both": ["chicago", "city"], "same": ["cities"], "far": ["weekend"]},
        words.Vocabulary.from_vectors(vectors))
    # the same word is BM25's to count; 0.1 is below the threshold; "awesome" has no vector and is skipped
    assert set(found) == {"trip", "both"}
    def scaled(a: np.ndarray, b: np.ndarray) -> float:
        return (float(a @ b) - 0.4) / 0.6

    # cities~chicago counts but is not named (two words, not one in two spellings: index/words.same_stem)
    assert found["trip"] == (pytest.approx(2.0 * scaled(cities, chicago), abs=1e-5), "")
    assert found["both"] == (pytest.approx(2.0 * scaled(cities, city), abs=1e-5), "cities~city")
    # each query word counts its own best word, weighted by its IDF
    two = words.soft_scores(["cities", "weekend"], [cities, weekend], [2.0, 1.0], {"m": ["chicago", "weekend"],
                            "n": ["city", "saturday"]},
                            words.Vocabulary.from_vectors({**vectors, "saturday": unit(0.1, 0.2, 0.97)}))
    assert two["n"][0] == pytest.approx(2.0 * scaled(cities, city) + 1.0 * scaled(unit(0.1, 0.2, 0.97), weekend),
                                        abs=1e-5)
    assert two["m"][1] == ""
    assert words.soft_scores([], [], [], {"m": ["city"]}, words.Vocabulary.from_vectors(vectors)) == {}
    # stored vectors give the same scores as the floats they were packed from
    packed = words.Vocabulary.from_blobs({w: words.pack(v) for w, v in vectors.items()})
    again = words.soft_scores(["cities"], [cities], [2.0], {"both": ["chicago", "city"]}, packed)
    assert again["both"][0] == pytest.approx(found["both"][0], abs=0.02) and again["both"][1] == "cities~city"


def stored_words(store: Store) -> dict[str, int]:
    return dict(store.conn.execute(f"SELECT word, uses FROM {word_vectors.TABLE}").fetchall())


def test_the_worker_embeds_new_words_once_and_forgetting_removes_them(store):
    trip = store.save("Last year I took a solo trip to Spain and loved the food there.")
    visit = store.save("I visited my grandmother every Sunday this year, she lives nearby in Spain.")
    assert stored_words(store) == {} and store.stats()["vector_backlog"]["words"] == 2
    assert store.add_word_vectors(limit=1) == 1 and store.add_word_vectors() == 1 and store.add_word_vectors() == 0
    table = stored_words(store)
    assert table["spain"] == 2 and table["trip"] == 1 and table["grandmother"] == 1
    assert "year" in table and "the" not in table and "last" in table
    row = store.conn.execute("SELECT words FROM memories WHERE id = ?", (trip.id,)).fetchone()
    assert row[0].split() == words.memory_words(store.get(trip.id).title, store.get(trip.id).content)
    blob = store.conn.execute(f"SELECT vector FROM {word_vectors.TABLE} WHERE word = 'spain'").fetchone()[0]
    expected = np.asarray(store.embedder.embed(["spain"])[0], np.float32)
    assert float(words.unpack(blob) @ expected) > 0.999

    store.forget(ids=[trip.id], reason="test")  # a forgotten memory's own words leave the database with it
    table = stored_words(store)
    assert "trip" not in table and "food" not in table and table["spain"] == 1 and table["grandmother"] == 1
    store.forget(ids=[visit.id], reason="test")
    assert stored_words(store) == {}


def test_a_new_embedding_model_embeds_the_words_again(store):
    store.save("Integration tests need Docker running locally with Postgres and Redis containers.")
    store.add_word_vectors()
    assert stored_words(store)
    with store.transaction() as conn:
        conn.execute("UPDATE meta SET value = 'some-other-model|384' WHERE key = 'embedding_model'")
    store.prepare_vectors()
    assert stored_words(store) == {}
    assert store.conn.execute("SELECT COUNT(*) FROM memories WHERE words IS NOT NULL").fetchone()[0] == 0
    store.embed_pending()
    assert store.add_word_vectors() == 1 and stored_words(store)["docker"] == 1


def test_search_credits_similar_words_and_says_which(settings, embedder, monkeypatch):
    """Similar words add to BM25's scores. Here the trip's meaning alone stands out and BM25's best match holds
    one of the two terms, so score fusion leaves BM25 out (`ranking.keyword_trust`, tests/test_keyword_trust.py)
    and the trip is first by meaning; with BM25 at its set weight, its similar words credit it and say which."""
    from agentmem_mcp.recall import retrieval

    texts = ["Last year I took a solo trip to Spain and loved the food there.",
             "I visited my grandmother every Sunday this year, she lives nearby.",
             "The museum I visited had a great exhibit about old maps.",
             "Our team visited the new office downtown for the planning meeting.",
             "The release checklist lives in docs/release.md and must be followed."]
    monkeypatch.setattr(retrieval, "keyword_trust", lambda *_: 1.0)
    with Store.open(settings, project="/repo/a", embedder=embedder, sync_index=True) as store:
        saved = [store.save(t).id for t in texts]
        query = "Which countries have I visited?"
        before = {h.id: h for h in store.search(query, record_access=False).hits}
        assert not any("similar words" in h.why for h in before.values())  # the worker has not run yet
        store.add_word_vectors()
        after = {h.id: h for h in store.search(query, record_access=False).hits}
        trip = after[saved[0]]
        assert trip.score > before[saved[0]].score  # it had no keyword at all before
        assert "similar words" not in trip.why  # countries~spain counts, but it is not one word: nothing to name
        off = Store.open(settings.replace(soft_match_weight=0.0, expansion_weight=0.0), project="/repo/a",
                         embedder=embedder)
        with off:
            assert {h.id: h.score for h in off.search(query, record_access=False).hits} == {
                i: h.score for i, h in before.items()}
            assert not any("similar words" in h.why for h in off.search(query, record_access=False).hits)
        monkeypatch.undo()
        assert store.search(query, record_access=False).hits[0].id == saved[0]


def test_the_model_puts_instances_near_their_kind(embedder):
    """The similarities index/words.py quotes, with the real model: a kind and its instances are similar, an
    unrelated word is not."""
    pairs = {("cities", "chicago"): 0.56, ("countries", "england"): 0.64, ("pets", "dog"): 0.70,
             ("exercises", "yoga"): 0.59, ("exercises", "weekend"): 0.17}
    vectors = dict(zip(sorted({w for pair in pairs for w in pair}),
                       embedder.embed(sorted({w for pair in pairs for w in pair}))))
    for (a, b), quoted in pairs.items():
        assert float(vectors[a] @ vectors[b]) == pytest.approx(quoted, abs=0.01), (a, b)
        assert (float(vectors[a] @ vectors[b]) >= words.SIMILAR_FROM) == (b != "weekend")


def test_a_failure_in_similar_words_does_not_fail_the_search(store, monkeypatch):
    saved = store.save("Last year I took a solo trip to Spain and loved the food there.")
    store.add_word_vectors()

    def broken(*_args, **_kwargs):
        raise RuntimeError("disk I/O error")

    monkeypatch.setattr(words.WordMatrix, "soft_scores", broken)
    found = store.search("Which countries have I visited?")
    assert [h.id for h in found.hits] == [saved.id] and "similar words" not in found.hits[0].why


def test_search_compares_the_first_words_of_a_long_memory():
    from agentmem_mcp.index.words import MAX_MEMORY_WORDS, searched_words

    stored = " ".join(f"word{chr(97 + n % 26)}{n}" for n in range(300))
    assert searched_words(stored) == stored.split()[:MAX_MEMORY_WORDS]
    assert searched_words("trip england") == ["trip", "england"] and searched_words("") == []


def _word_store(tmp_path, seed: int):
    """A database holding 300 word vectors near one base vector, and 40 memories of 12 of those words each:
    (connection, the random generator to go on with, base, vectors by word, candidates' words by memory id)."""
    from agentmem_mcp.db.connection import connect
    from agentmem_mcp.db.migrations import migrate

    rng = np.random.default_rng(seed)
    base = unit(*rng.normal(size=16))
    vectors = {f"word{chr(97 + n % 26)}{chr(97 + n // 26)}": unit(*(base + rng.normal(scale=0.9, size=16)))
               for n in range(300)}
    conn = connect(tmp_path / "m.db")
    migrate(conn)
    conn.executemany(f"INSERT INTO {word_vectors.TABLE} (word, uses, vector) VALUES (?, 1, ?)",
                     [(w, words.pack(v)) for w, v in vectors.items()])
    names = list(vectors)
    return conn, rng, base, vectors, {f"m{n}": " ".join(names[n * 7:n * 7 + 12]) for n in range(40)}


def test_the_word_matrix_scores_as_the_vocabulary_does_and_keeps_rows_across_searches(tmp_path):
    """Search reads word vectors through `WordMatrix` (one per store): the same scores and pairs as
    `soft_scores` over the packed vectors, rows read once, a memory's rows kept until its words change, and
    a word the worker has not embedded yet looked up again."""
    conn, rng, base, vectors, candidates = _word_store(tmp_path, seed=3)
    query = ["querya", "queryb"]
    query_vectors, idf = [base, unit(*rng.normal(size=16))], [2.0, 0.7]
    expected = words.soft_scores(query, query_vectors, idf, {m: ws.split() for m, ws in candidates.items()},
                                 words.Vocabulary.from_blobs({w: words.pack(v) for w, v in vectors.items()}))
    matrix = words.WordMatrix(max_words=1000)
    found = matrix.soft_scores(conn, query, query_vectors, idf, candidates)
    assert expected and set(found) == set(expected)
    for memory_id, (score, pair) in expected.items():
        assert found[memory_id][0] == pytest.approx(score, abs=1e-4) and found[memory_id][1] == pair
    assert len(matrix.words) == len({w for ws in candidates.values() for w in ws.split()})
    assert set(matrix.memory_rows) == set(candidates)

    # a memory whose words changed is read again; a word without a vector yet is not cached as missing
    changed = {"m0": "worddb queryas", "m1": candidates["m1"]}
    again = matrix.soft_scores(conn, query, query_vectors, idf, changed)
    assert matrix.memory_rows["m0"][0] == candidates["m0"] and set(again) <= {"m0", "m1"}
    conn.execute(f"INSERT INTO {word_vectors.TABLE} (word, uses, vector) VALUES ('queryas', 1, ?)",
                 (words.pack(base),))
    third = matrix.soft_scores(conn, query, query_vectors, idf, changed)
    assert third["m0"][1] == "querya~queryas" and matrix.memory_rows["m0"][0] == "worddb queryas"
    # a query word that is itself among a memory's words leaves that word to BM25
    assert "querya~worddb" not in {p for _, p in matrix.soft_scores(
        conn, ["worddb"], [vectors["worddb"]], [1.0], {"x": "worddb"}).values()}

    # full: emptied and filled again, with the same scores
    small = words.WordMatrix(max_words=100)
    few = {m: ws for m, ws in list(candidates.items())[:5]}
    for _ in range(3):
        assert small.soft_scores(conn, query, query_vectors, idf, candidates) == {}  # more words than it holds
        part = small.soft_scores(conn, query, query_vectors, idf, few)
        assert {m: round(s, 4) for m, (s, _) in part.items()} == \
            {m: round(found[m][0], 4) for m in few if m in found}
    conn.close()


def test_a_question_asked_again_gets_what_a_new_matrix_gives_in_its_order(tmp_path):
    """The similar-word scores of the last questions are kept: asked again over the same memories, a question
    gets them back, in the order a computation now would give (search breaks ties in that order), and a question
    with other IDFs, or over memories whose words changed, is computed again."""
    conn, rng, base, vectors, candidates = _word_store(tmp_path, seed=5)
    query, query_vectors, idf = ["querya", "queryb"], [base, unit(*rng.normal(size=16))], [2.0, 0.7]
    matrix = words.WordMatrix(max_words=1000)
    matrix.soft_scores(conn, query, query_vectors, idf, dict(list(candidates.items())[20:]))  # rows of half known
    mixed = dict(sorted(candidates.items(), key=lambda item: hash(item[0]) % 97))
    first = matrix.soft_scores(conn, query, query_vectors, idf, mixed)
    again = matrix.soft_scores(conn, query, query_vectors, idf, mixed)
    fresh = words.WordMatrix(max_words=1000).soft_scores(conn, query, query_vectors, idf, mixed)
    assert fresh and list(again) == list(fresh) == [m for m in mixed if m in fresh]
    assert again == first and {m: p for m, (_, p) in again.items()} == {m: p for m, (_, p) in fresh.items()}
    for memory_id, (score, _) in fresh.items():
        assert again[memory_id][0] == pytest.approx(score, abs=1e-6)
    assert len(matrix.answers) == 2
    other_idf = matrix.soft_scores(conn, query, query_vectors, [1.0, 0.7], mixed)
    assert other_idf["m3"][0] != again["m3"][0] and len(matrix.answers) == 3
    changed = {**mixed, "m3": "worddb wordcc"}
    assert matrix.soft_scores(conn, query, query_vectors, idf, changed).keys() == \
        words.WordMatrix(max_words=1000).soft_scores(conn, query, query_vectors, idf, changed).keys()
    conn.close()


def test_a_model_change_empties_the_word_matrix(store):
    """Word vectors of two models are never compared: when the vector table is made again for another
    model, the words the store's searches have met are forgotten with the table's."""
    store.save("The configuration of the linter lives in pyproject.toml under tool.ruff.")
    store.add_word_vectors()
    assert "similar words" in store.search("where is the lint config").hits[0].why
    assert store.word_matrix.words and store.word_matrix.memory_rows
    with store.transaction() as conn:  # as a change of AGENTMEM_EMBED_MODEL leaves it at the next start
        conn.execute("UPDATE meta SET value = 'another/model|384|bit+f32' WHERE key = 'embedding_model'")
    store.prepare_vectors()
    assert not store.word_matrix.words and not store.word_matrix.memory_rows
    assert store.conn.execute(f"SELECT COUNT(*) FROM {word_vectors.TABLE}").fetchone()[0] == 0
    store.add_word_vectors()
    assert "similar words" in store.search("where is the lint config").hits[0].why
