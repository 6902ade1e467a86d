"""Stand-ins for the model APIs Codex and Gemini CLI call, on 127.0.0.1, so that the real clients run end to end
in a test (their hooks, their tools, their session logs) without reaching OpenAI or Google. The only fake is the
model: each request is answered from a script, and every request is kept so a test can read what the client
sent the model (the context the hooks injected).

`FakeResponses` speaks OpenAI's Responses API as Codex uses it (POST /v1/responses, server-sent events);
`FakeGemini` speaks the Gemini API's streamGenerateContent (POST /v1beta/models/<model>:streamGenerateContent).
A script is a list of turns, one per request: a turn is a list of output items (a tool call or text). When the
script runs out, the model answers "Done.".
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

USAGE = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
         "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}


class _FakeModel:
    def __init__(self, script: list[list[dict[str, Any]]]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # model lists and the like: nothing to offer
                self._send(b"{}", "application/json")

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {}
                data, kind = owner.answer(self.path, body)
                self._send(data, kind)

            def _send(self, data: bytes, kind: str) -> None:
                self.send_response(200)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def next_turn(self, path: str, body: dict[str, Any]) -> list[dict[str, Any]] | None:
        with self._lock:
            self.requests.append({"path": path, "body": body})
            return self.script.pop(0) if self.script else None

    def answer(self, path: str, body: dict[str, Any]) -> tuple[bytes, str]:
        raise NotImplementedError

    def sent_text(self) -> str:
        """Everything the client sent the model, as one text (to look for injected context in)."""
        return "\n".join(json.dumps(r["body"], ensure_ascii=False) for r in self.requests)

    def __enter__(self) -> _FakeModel:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


class FakeResponses(_FakeModel):
    """OpenAI's Responses API, streamed. Turn items: {"shell": "cmd"} (Codex's exec_command),
    {"patch": "*** Begin Patch..."} (apply_patch), {"text": "..."} (an assistant message)."""

    def answer(self, path: str, body: dict[str, Any]) -> tuple[bytes, str]:
        turn = self.next_turn(path, body) or [{"text": "Done."}]
        number = len(self.requests)
        items = [self._item(item, f"{number}_{n}") for n, item in enumerate(turn)]
        events = [("response.created", {"response": {"id": f"resp_{number}"}})]
        events += [("response.output_item.done", {"output_index": n, "item": item}) for n, item in enumerate(items)]
        events.append(("response.completed", {"response": {"id": f"resp_{number}", "usage": USAGE}}))
        data = "".join(f"event: {name}\ndata: {json.dumps({'type': name, **fields})}\n\n" for name, fields in events)
        return data.encode(), "text/event-stream"

    @staticmethod
    def _item(item: dict[str, Any], tag: str) -> dict[str, Any]:
        if "shell" in item:
            return {"type": "function_call", "id": f"fc_{tag}", "call_id": f"call_{tag}", "name": "exec_command",
                    "arguments": json.dumps({"cmd": item["shell"]}), "status": "completed"}
        if "patch" in item:
            return {"type": "custom_tool_call", "id": f"ctc_{tag}", "call_id": f"call_{tag}", "name": "apply_patch",
                    "input": item["patch"], "status": "completed"}
        return {"type": "message", "role": "assistant", "id": f"msg_{tag}", "status": "completed",
                "content": [{"type": "output_text", "text": item["text"], "annotations": []}]}


class FakeGemini(_FakeModel):
    """The Gemini API's streamGenerateContent. Turn items: {"call": name, "args": {...}} (a function call) or
    {"text": "..."}."""

    def answer(self, path: str, body: dict[str, Any]) -> tuple[bytes, str]:
        if ":countTokens" in path:
            return b'{"totalTokens": 10}', "application/json"
        turn = self.next_turn(path, body) or [{"text": "Done."}]
        parts = [{"functionCall": {"name": item["call"], "args": item.get("args", {})}} if "call" in item
                 else {"text": item["text"]} for item in turn]
        chunk = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
                 "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}}
        if "alt=sse" in path:
            return f"data: {json.dumps(chunk)}\r\n\r\n".encode(), "text/event-stream"
        return json.dumps(chunk).encode(), "application/json"
