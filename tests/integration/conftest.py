# SPDX-License-Identifier: BSD-2-Clause
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from ferry_harness import OVMF_DIR, Machine, ovmf_missing  # noqa: E402


@pytest.fixture
def machine_factory(request):
    """Start machines for a test; close them all at its end, keeping logs."""
    started = []

    def make(kind="qemu", prompt=True, **kw):
        name = request.node.name.replace("/", "_").replace("[", "-").replace("]", "")
        if started:
            name += f"-{len(started)}"
        m = Machine(name, kind=kind, **kw)
        started.append(m)
        return m.start(prompt=prompt)

    yield make
    for m in started:
        m.close()
    if request.node.rep_call.failed if hasattr(request.node, "rep_call") else False:
        for m in started:
            print(f"console transcript kept in {m.logpath}")


def pytest_sessionstart(session):
    """On CI (.ci/run sets FERRY_CI) every test must run: the tests that need
    root (network namespaces) would otherwise skip and the run pass."""
    if os.environ.get("FERRY_CI") and os.geteuid() != 0:
        pytest.exit("FERRY_CI: the integration tests must run as root here "
                    "(network namespaces); they would be skipped", returncode=1)


def pytest_collection_modifyitems(session, config, items):
    """On CI the UEFI tests must run too: without OVMF they would skip and
    the run pass.

    test_vm.py's Bochs (VMX) tests run after the rest of that module: they
    share one Bochs host, which spins a host core even while idle, and it
    closes with the module, so it runs beside none of the QEMU tests."""
    where = [i for i, item in enumerate(items) if os.path.basename(str(item.fspath)) == "test_vm.py"]
    mine = [items[i] for i in where]
    vmx = [item for item in mine if item.name.endswith("[vmx]")]
    for i, item in zip(where, [item for item in mine if item not in vmx] + vmx):
        items[i] = item
    missing = ovmf_missing()
    if os.environ.get("FERRY_CI") and missing and any(
            os.path.basename(str(item.fspath)) == "test_uefi.py" for item in items):
        pytest.exit(f"FERRY_CI: the UEFI tests need {', '.join(missing)} in {OVMF_DIR} "
                    "(make deps); they would be skipped", returncode=1)


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)
