"""The "Across requests" tab: a shipped workload's requests in order, suffix decoding against prompt lookup."""
