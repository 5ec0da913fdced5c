"""infopt.runtime.host names the machine in a benchmark's JSON by its CPU model, so that figures shipped from two
hosts (say a Haswell and an EPYC, both '2 cores') can be told apart."""
from pathlib import Path

from infopt.runtime import host


def test_the_cpu_model_is_cpuinfos_model_name_when_linux_has_one():
    cpuinfo = Path("/proc/cpuinfo")
    names = [line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
             if line.startswith("model name")] if cpuinfo.is_file() else []
    model = host.cpu_model()
    assert model and model == (" ".join(names[0].split()) if names else model)


def test_without_cpuinfo_the_model_falls_back_to_platform(monkeypatch):
    def unreadable(self, *args, **kwargs):
        raise OSError("no such file")

    monkeypatch.setattr(Path, "read_text", unreadable)
    monkeypatch.setattr(host.platform, "processor", lambda: "")
    monkeypatch.setattr(host.platform, "machine", lambda: "riscv64")
    assert host.cpu_model() == "riscv64"


def test_the_machine_summary_names_model_cores_and_threads(monkeypatch):
    monkeypatch.setattr(host, "cpu_model", lambda: "Some CPU")
    monkeypatch.setattr(host.os, "cpu_count", lambda: 16)
    assert host.machine_summary() == "Some CPU, 16 cores, one thread per path"
    assert host.machine_summary("4 threads") == "Some CPU, 16 cores, 4 threads"
