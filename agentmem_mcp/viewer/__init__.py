"""`agentmem ui`: a local web viewer over the store (search, memories, sessions, project knowledge, lifecycle,
quarantine and audit, health), served by Starlette + uvicorn on 127.0.0.1 with a per-run token.

Modules: `run` starts the server, `app` routes requests, `security` guards every request (token cookie, CSRF,
CSP, host check), `reads` holds the read-only SQL over an aiosqlite connection, `pages` and `views` render HTML
through `html` (every interpolated string is escaped), `charts` draws inline SVG. Changes go through the
library (lifecycle/remember.py, lifecycle/confirm.py, lifecycle/forget.py), never through SQL written here.
"""
