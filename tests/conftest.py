import sys
from pathlib import Path

# tests/reference.py (the plain loop) is imported by name from the tests.
sys.path.insert(0, str(Path(__file__).parent))
