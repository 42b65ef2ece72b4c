"""Serving the lab to people: limits on a request, the process-wide set-up, and Space deployment.

  limits.py        what one request may ask for; bad input -> one clear line
  process.py       the set-up every entry point shares (before torch starts)
  space_deploy.py  uploading a snapshot to a Hugging Face Space
"""
