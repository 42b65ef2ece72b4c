"""`python -m specdec deploy --space OWNER/NAME`: upload a snapshot of this working tree to a Hugging Face Space.
The arguments and the upload are specdec/serving/space_deploy.py's (add_deploy_parser, run_deploy)."""
from __future__ import annotations

from specdec.serving.space_deploy import add_deploy_parser as add_parser
from specdec.serving.space_deploy import run_deploy as run

__all__ = ["add_parser", "run"]
