"""Secrets: the values the user gave us (removed by value), the shapes keys have, credentials in URLs."""
