"""Output for people: terminal tables and panels, markdown, the flip report and the bake-off page."""
