"""The app's views of vLLM servers: Generate, Race and Sweep on running servers.
"""
