"""The app's tabs, each its layout and the callbacks behind it.
"""
