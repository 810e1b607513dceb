"""Run folders: read back, written as a whole, their page versions stored, their replays receipted."""
