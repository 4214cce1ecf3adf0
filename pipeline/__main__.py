"""``python -m pipeline --config configs/demo.yaml`` — the whole pipeline, one stage at a time;
``python -m pipeline arena ...`` — tasks calibrated to the agent being trained."""

import sys

if __name__ == "__main__":
    argv = sys.argv[1:]
    if argv[:1] == ["arena"]:
        from pipeline.arena import main as arena

        raise SystemExit(arena(argv[1:]))
    from pipeline.orchestrate import main

    raise SystemExit(main(argv))
