"""The Class board tab: every run on this app, pooled per exercise and configuration."""
