"""The peer the serving-cost bench compares fisk-ai's MCP server with: the official Python MCP SDK's MCPServer
serving one tool that runs the same trivial application command as the fisk-ai server's `echo` tool, the way a
hand-written SDK server of a CLI would (an asyncio subprocess, output captured).

Usage: echo_server.py APP PORT   (streamable HTTP on 127.0.0.1:PORT, SSE answers as fisk-ai's)
"""

import asyncio
import sys

from mcp.server.mcpserver import MCPServer

APP = sys.argv[1]
server = MCPServer("py-echo")


@server.tool()
async def echo(words: list[str] | None = None) -> str:
    """Print the words back"""
    proc = await asyncio.create_subprocess_exec(
        APP, "echo", "--", *(words or []),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate()
    return f'{{"exit_code":{proc.returncode},"output":{out.decode()!r}}}'


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
