import sys
from pathlib import Path

# tests import their shared builders as `factories`
sys.path.insert(0, str(Path(__file__).parent))
