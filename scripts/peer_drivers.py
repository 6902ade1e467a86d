"""The driver processes bench_peers.py times: each system fed JSON lines (build, save, search) on stdin, answering
with JSON lines and its own timing: mcp-memory-service and basic-memory in venvs of their own, agentmem in this
interpreter (bench_peers.py --driver)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from harness import MODEL_NAME

PEER = "mcp-memory-service"

# The peer's driver: JSON lines in, JSON lines out, run by the peer venv's interpreter.
PEER_DRIVER = r'''
import asyncio, json, os, sys, time
from mcp_memory_service.storage.sqlite_vec import SqliteVecMemoryStorage
from mcp_memory_service.models.memory import Memory
from mcp_memory_service.utils.hashing import generate_content_hash

def memory(item):
    return Memory(content=item["content"], content_hash=generate_content_hash(item["content"]),
                  tags=item.get("tags", []), memory_type=item.get("type"))

async def main():
    storage = SqliteVecMemoryStorage(os.environ["MCP_MEMORY_SQLITE_PATH"])
    await storage.initialize()
    out = sys.stdout
    model = type(getattr(storage, "embedding_model", None)).__name__
    if "onnx" not in model.lower():  # e.g. its hash fallback when onnxruntime is missing: not a fair comparison
        sys.exit(f"the peer's embedding model is {model}, not its ONNX model")
    for line in sys.stdin:
        request = json.loads(line)
        op = request["op"]
        started = time.perf_counter()
        if op == "build":
            await storage.store_batch([memory(item) for item in request["items"]])
            answer = {}
        elif op == "save":
            ok, message = await storage.store(memory(request["item"]))
            answer = {"ok": bool(ok)}
        elif op == "search":
            results = await storage.retrieve(request["query"], n_results=10)
            answer = {"contents": [r.memory.content for r in results]}
        else:
            break
        answer["ms"] = (time.perf_counter() - started) * 1000
        out.write(json.dumps(answer) + "\n")
        out.flush()

asyncio.run(main())
'''


BASIC_MEMORY = "basic-memory"

# basic-memory's driver, run by its venv's interpreter: notes written and searched through its own MCP tool functions
# (in process, as its CLI calls them), in text mode: its vector search needs a model from the Hugging Face Hub.
BASIC_MEMORY_DRIVER = r'''
import asyncio, json, sys, time, warnings
warnings.filterwarnings("ignore")
from loguru import logger
logger.remove()
from basic_memory.mcp.tools import search_notes, write_note

async def main():
    contents = {}
    async def note(item):
        title = f"n{len(contents)}"
        contents[title] = item["content"]
        await write_note(title=title, content=item["content"], directory="bench")
    for line in sys.stdin:
        request = json.loads(line)
        op = request["op"]
        started = time.perf_counter()
        if op == "build":
            for item in request["items"]:
                await note(item)
            answer = {}
        elif op == "save":
            await note(request["item"])
            answer = {}
        elif op == "search":
            found = await search_notes(query=request["query"], page_size=10, output_format="json")
            titles = [r.get("title") for r in found.get("results", [])] if isinstance(found, dict) else []
            answer = {"contents": [contents[t] for t in titles if t in contents]}
        else:
            break
        answer["ms"] = (time.perf_counter() - started) * 1000
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()

asyncio.run(main())
'''


def basic_memory_python(args: argparse.Namespace) -> Path | None:
    """basic-memory's venv (made with --bm-python, it needs Python 3.12+), installed from PyPI once; None when
    that fails (the table then leaves it out and says why)."""
    python = args.bm_venv / "bin" / "python"
    try:
        if not python.exists():
            subprocess.run([args.bm_python, "-m", "venv", str(args.bm_venv)], check=True)
        if subprocess.run([str(python), "-c", "import basic_memory"], capture_output=True).returncode != 0:
            subprocess.run([str(python), "-m", "pip", "install", "-q", BASIC_MEMORY], check=True)
        return python
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"basic-memory left out: {exc}", file=sys.stderr)
        return None


def basic_memory_env(base: dict[str, str], tmp: Path, name: str) -> dict[str, str]:
    home = tmp / f"bm-home-{name}"
    home.mkdir(parents=True, exist_ok=True)
    return dict(base, HOME=str(home), BASIC_MEMORY_HOME=str(home / "notes"), BASIC_MEMORY_CONFIG_DIR=str(home / "cfg"),
                BASIC_MEMORY_LOG_LEVEL="WARNING", HF_HUB_OFFLINE="1", LOGFIRE_IGNORE_NO_CONFIG="1")


def agentmem_driver(home: Path, model: Path) -> int:
    """The agentmem side of the same protocol (run with --driver)."""
    from agentmem_mcp.config import load_settings
    from agentmem_mcp.index.embedder import Embedder
    from agentmem_mcp.store import Store

    embedder = Embedder(MODEL_NAME, model)
    embedder.load()
    settings = load_settings(env={}, home=home, embed_model_path=model, shared_embedder=False)
    with Store.open(settings, project="/bench/project", embedder=embedder) as store:
        for line in sys.stdin:
            request = json.loads(line)
            started = time.perf_counter()
            if request["op"] == "build":
                store.save_many([{"content": i["content"], "type": i["type"], "tags": i.get("tags", [])}
                                 for i in request["items"]], supersede_check=False)
                if request.get("last"):
                    store.flush()
                    while store.add_sentence_pieces():
                        pass
                    while store.add_word_vectors():
                        pass
                answer: dict = {}
            elif request["op"] == "save":
                item = request["item"]
                store.save(item["content"], type=item["type"], tags=item.get("tags", []))
                answer = {}
            elif request["op"] == "search":
                hits = store.search(request["query"], limit=10).hits
                contents = [row[0] for hit in hits for row in store.conn.execute(
                    "SELECT content FROM memories WHERE id = ?", (hit.id,))]
                answer = {"contents": contents}
            else:
                break
            answer["ms"] = (time.perf_counter() - started) * 1000
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()
    return 0


class Driver:
    def __init__(self, name: str, command: list[str], env: dict[str, str], log: Path) -> None:
        self.name, self.log = name, log
        with open(log, "w") as err:
            self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True,
                                         stderr=err)

    def call(self, **request) -> dict:
        assert self.proc.stdin and self.proc.stdout
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except BrokenPipeError:
            line = ""
        if not line:
            raise SystemExit(f"the {self.name} driver died (exit {self.proc.wait()}): "
                             f"{self.log.read_text(errors='replace')[-2000:]}")
        return json.loads(line)

    def close(self) -> None:
        try:
            self.call(op="stop")
        except (SystemExit, BrokenPipeError, json.JSONDecodeError):
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def peer_venv(args: argparse.Namespace) -> Path:
    python = args.venv / "bin" / "python"
    if not python.exists():
        subprocess.run([args.peer_python, "-m", "venv", str(args.venv)], check=True)
    check = subprocess.run([str(python), "-c", "import mcp_memory_service, sys; print(mcp_memory_service.__version__)"],
                           capture_output=True, text=True)
    if check.returncode != 0 or check.stdout.strip() != args.version:
        # its ONNX path needs these two, which its base install leaves out (it falls back to hash vectors)
        subprocess.run([str(python), "-m", "pip", "install", "-q", f"{PEER}=={args.version}", "onnxruntime",
                        "tokenizers"], check=True)
    return python


def peer_env(base: dict[str, str], tmp: Path, model: Path, name: str) -> dict[str, str]:
    """A temporary HOME holding the model files where the peer looks for them, and its database."""
    home = tmp / f"peer-home-{name}"
    onnx = home / ".cache" / "mcp_memory" / "onnx_models" / "all-MiniLM-L6-v2" / "onnx"
    onnx.mkdir(parents=True, exist_ok=True)
    for item in model.iterdir():
        if item.is_file() and not (onnx / item.name).exists():
            os.symlink(item, onnx / item.name)
    return dict(base, HOME=str(home), MCP_MEMORY_USE_ONNX="1", MCP_MEMORY_ONNX_ALLOW_DOWNLOAD="0",
                MCP_MEMORY_STORAGE_BACKEND="sqlite_vec", MCP_MEMORY_SQLITE_PATH=str(home / "memory.db"),
                HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
