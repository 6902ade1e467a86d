"""How fast the embedding model embeds passages at several batch sizes, texts sorted by length as
`Embedder._embed_passages` sorts them, the batch sizes alternated round by round in one process.

    python scripts/bench_embed_batch.py [--texts 200] [--rounds 3] [--sizes 4,8,32] [--model PATH]

Texts are made-up words with a log-normal length (about 30 words on average, like the worker's titles, prompts,
errors and summary lines). Prints texts/s (median over the rounds) per batch size, the date and the machine.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

from harness import MODEL_NAME, default_model, describe_machine

from agentmem_mcp.index.embedder import Embedder

WORDS = ("parser config session render token cache handler export billing invoice user account queue retry schema "
         "migration report index search vector client server router loader writer reader mix test passed "
         "failed").split()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default="4,8,32")
    parser.add_argument("--model", type=Path,
                        default=default_model())
    args = parser.parse_args(argv)
    embedder = Embedder(MODEL_NAME, args.model)
    if not embedder.load():
        print(f"cannot load the model from {args.model}: {embedder.error}", file=sys.stderr)
        return 1
    rng = random.Random(3)
    texts = sorted((" ".join(rng.choice(WORDS) for _ in range(int(rng.lognormvariate(3.0, 0.8)) + 3))
                    for _ in range(args.texts)), key=len)
    sizes = [int(s) for s in args.sizes.split(",")]
    seconds: dict[int, list[float]] = {size: [] for size in sizes}
    for _ in range(args.rounds):
        for size in sizes:
            started = time.perf_counter()
            list(embedder._model.embed(texts, batch_size=size))
            seconds[size].append(time.perf_counter() - started)
    print(json.dumps({
        "texts_per_second": {size: round(args.texts / statistics.median(s), 1) for size, s in seconds.items()},
        "seconds": {size: [round(x, 2) for x in s] for size, s in seconds.items()},
        "texts": args.texts, "mean_words": round(statistics.mean(len(t.split()) for t in texts), 1),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": describe_machine(),
        "command": "python scripts/bench_embed_batch.py " + " ".join(argv if argv is not None else sys.argv[1:]),
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
