"""The distributed suite: light tests always; the heavy ones on request.

Heavy tests need 8 simulated CPU devices for JAX (set here, before JAX
starts) or start several processes; they run in their own invocation:

    D2S_DIST_TESTS=1 python -m pytest tests/distributed

(`.ci/run` does, bounded in time). In the main run they are skipped: JAX is
shared with the rest of the suite there, and its device count is fixed once
it starts.
"""
import os

if os.environ.get("D2S_DIST_TESTS") == "1":
    try:
        import jax
        jax.config.update("jax_num_cpu_devices", 8)  # dist_helpers.DEVICES
    except ImportError:  # pragma: no cover - the xla extra is missing
        pass
