"""What `tools/list` costs an agent every session: the tools' JSON size / 4 as tokens, per tool and in all,
measured against the real `agentmem serve` over stdio. Usage: python scripts/measure_tools.py [--json]"""

from __future__ import annotations

import json
import sys
import tempfile

import anyio
from harness import clean_env
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


async def tools_list(env: dict[str, str], cwd: str) -> list[dict]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "agentmem_mcp", "serve"], env=env, cwd=cwd)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.list_tools()
            return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in result.tools]


def main() -> int:
    with tempfile.TemporaryDirectory() as home:
        env = clean_env()
        env.update(AGENTMEM_HOME=home, AGENTMEM_EMBEDDINGS="0")
        tools = anyio.run(tools_list, env, home)
    if "--json" in sys.argv:
        print(json.dumps(tools, indent=2))
        return 0
    total = len(json.dumps(tools))
    wire = len(json.dumps(tools, separators=(",", ":")))  # as the server sends it
    for tool in tools:
        print(f"{tool['name']:16} {len(json.dumps(tool)) / 4:6.0f} tokens")
    print(f"{'total':16} {total / 4:6.0f} tokens ({total} characters of JSON; {wire} as sent, {wire / 4:.0f} tokens)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
