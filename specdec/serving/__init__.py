"""Serving the lab to people: limits on a request, what a class shares, and Space deployment.

  limits.py        what one request may ask for; bad input -> one clear line
  space_deploy.py  uploading a snapshot to a Hugging Face Space
"""
