"""Run the fuzz harness (:mod:`rmqtwin.conformance.fuzz_harness`) under atheris, libFuzzer's engine.

    python -m rmqtwin.conformance.fuzz --seeds DIR          # one well-formed seed per request code
    python -m rmqtwin.conformance.fuzz [--codec] DIR [-runs=1000000 -max_len=4096 -merge=1 ...]
    python -m rmqtwin.conformance.fuzz DIR -jobs=2 -workers=2 -runs=500000   # two processes, 1M inputs

``--codec`` fuzzes the codec alone (``codec_input``), fast enough for millions of inputs; without it
each input is a connection to the in-process broker.

The codec, the broker and the store are imported under atheris' instrumentation (coverage guides the
mutations); the first finding stops the run and is written as ``crash-*``. libFuzzer prints the number
of inputs run (``Done N runs``) and the coverage reached.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    import atheris  # type: ignore[import-untyped]  # the fuzzing engine (dev extra); the harness's replay does not need it

    codec_only = len(argv) > 1 and argv[1] == "--codec"
    if codec_only:
        del argv[1]
    # libFuzzer's -jobs/-fork start each job as the shell command argv[0] + flags: make it this module.
    argv = [f"{sys.executable} -m rmqtwin.conformance.fuzz" + (" --codec" if codec_only else ""), *argv[1:]]
    # What is imported in here is instrumented: coverage of the codec alone, or of the codec, the
    # broker and the store.
    instrumented = (
        ["rmqtwin.codec"] if codec_only else ["rmqtwin.codec", "rmqtwin.fakes", "rmqtwin.store_mirror"]
    )
    with atheris.instrument_imports(include=instrumented):
        import rmqtwin.codec.command
        import rmqtwin.codec.headers

        if not codec_only:
            import rmqtwin.fakes.broker.controller  # noqa: F401
    from rmqtwin.conformance.fuzz_harness import Harness, codec_input, seeds

    if len(argv) > 2 and argv[1] == "--seeds":
        print(f"{seeds(argv[2])} seeds written to {argv[2]}")
        return 0
    if codec_only:
        atheris.Setup(argv, codec_input)
        atheris.Fuzz()
        return 0
    from twisted.logger import globalLogBeginner

    # Nothing printed for the expected failures (decoding errors): the harness reads the log itself.
    globalLogBeginner.beginLoggingTo([], discardBuffer=True, redirectStandardIO=False)
    harness = Harness()
    atheris.Setup(argv, harness.one_input)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
