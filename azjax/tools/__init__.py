"""Test and bench tooling, apart from the library's core: the speed bench (`bench.py`, `azjax bench`), the compile
watch (`compile_watch.py`) and its log of every compile (`compile_log.py`), the protocol fuzzers of the engines
(`fuzz.py`) and the resume soak (`soak.py`).

A layer above everything it uses: no core module imports it (tests/test_layers.py), and the command line imports it
only inside the command that runs it.
"""
