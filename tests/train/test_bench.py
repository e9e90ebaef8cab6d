"""azjax/train/bench.py: what a measurement records of the machine it ran on."""

from __future__ import annotations

from azjax.train.bench import cpu_model, machine

CPUINFO = """processor\t: 0
model name\t: AMD EPYC 9654 96-Core Processor
flags\t\t: fpu sse2 avx avx2 fma avx512f avx512bw avx512_bf16
"""


def test_the_cpu_model_and_the_vector_extensions_xla_uses_are_read_from_cpuinfo() -> None:
    assert cpu_model(CPUINFO) == {"cpu_model": "AMD EPYC 9654 96-Core Processor",
                                  "cpu_simd": ["avx2", "fma", "avx512f", "avx512_bf16"]}


def test_without_cpuinfo_the_cpu_is_the_platforms_processor_and_no_extensions_are_claimed() -> None:
    described = cpu_model("")
    assert described["cpu_model"] and described["cpu_simd"] == []


def test_a_measurement_records_this_machines_cpu_model_beside_its_jax() -> None:
    described = machine()
    assert isinstance(described["cpu_model"], str) and described["cpu_model"]
    assert isinstance(described["cpu_simd"], list) and described["jax"]
