"""The HTTP seam of a run: every exchange recorded into its conversation's cassette, or answered from it."""
