"""Trust policy, pure: where a memory came from, whose words a text is, and what reads as instructions."""
