"""The long-lived processes and how they meet: the relay a client starts, the user's shared process, its sockets
and sessions, the worker loop and its lease."""
