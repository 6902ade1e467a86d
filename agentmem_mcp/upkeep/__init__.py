"""Keeping the store: statistics, rebuilds and health checks, export and import, listing and purging."""
