"""`agentmem ui`: a local web viewer over the store (search, memories, sessions, project knowledge, lifecycle,
quarantine and audit, health), served by Starlette + uvicorn on 127.0.0.1 with a per-run token.

Modules: `run` starts the server, `app` routes requests, `state` is what every request shares (the store, the
read-only aiosqlite connection, the page frame), `security` guards every request (token cookie, CSRF, CSP, host
check), `pages` and `upkeep` read (plain rows through `db/browse.py`, awaited on the aiosqlite connection) and
`views` renders HTML through `html` (every interpolated string is escaped), `charts` draws the charts. Changes go
through the library (lifecycle/remember.py, lifecycle/confirm.py, lifecycle/forget.py); no SQL is written here.
"""
