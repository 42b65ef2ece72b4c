"""The Sweep tab: drafts × K schedules × K × temperatures, each point a measured speedup."""
