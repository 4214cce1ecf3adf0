"""``python -m pipeline --config configs/demo.yaml`` — the whole pipeline, one stage at a time."""

import sys

from pipeline.orchestrate import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
