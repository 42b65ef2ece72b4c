"""Training the models the lab ships, outside the runtime package: the lab family (assets/models) and the
draft zoo (assets/drafters). `python -m training build|cards|pins|zoo`.
"""
