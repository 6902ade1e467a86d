"""What happens to memories over time: remembered, summarised, consolidated, recalled, decayed, forgotten."""

# The labelled lines of a session summary that the briefing reads back (lifecycle/summarize.py writes them).
OUTCOME = "Outcome (the agent's reports)"  # the lead sentences of the session's last reports, in order
UNTRIED = "Edited last, not run since"  # code files changed after the session's last run
BRANCH = "Branch"  # the git branch the session worked on
PULL_REQUESTS = "Pull requests"  # opened / merged in the session
UNCOMMITTED = "Not committed at the end"  # files edited after the session's last commit
UNRESOLVED = "Unresolved"  # the user's request the session ended on without an answer
NEXT = "Next (the agent's words)"  # what the agent said is left or next
STILL_FAILING = "Still failing at the end"
# the toolchain fact's part that the briefing shows (lifecycle/consolidate.py writes it)
MCP_SERVERS = "MCP servers the sessions used"
