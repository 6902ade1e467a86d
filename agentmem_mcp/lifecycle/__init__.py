"""What happens to memories over time: remembered, summarised, consolidated, recalled, decayed, forgotten."""

OUTCOME = "Outcome (the agent's reports)"  # the summary line a session's reports are digested into
UNTRIED = "Edited last, not run since"  # the summary line of code files changed after the session's last run
