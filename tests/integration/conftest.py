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


# The modules, longest first (seconds in a serial run on a 2-core machine,
# 7 December): `make integration` hands whole modules to two pytest-xdist
# workers in this order (--dist loadfile), so the long ones start at once
# and the short ones fill in at the end.  A module not named here goes last.
LONGEST_FIRST = [
    "test_migrate.py",          # 395
    "test_linux_migrate.py",    # 303, the Linux boot under Bochs
    "test_vm.py",               # 260
    "test_guestnet.py",         # 150
    "test_linux.py",            # 136
    "test_bigbox.py",           # 106
    "test_net.py",              # 89
    "test_nics.py",             # 64
    "test_trust.py",            # 47
    "test_boot_shell.py",       # 45
    "test_smp.py",              # 38
    "test_ipi.py",              # 32
    "test_guest_direct.py",     # 24
    "test_uefi.py",             # 14
]


def _module_rank(item):
    name = os.path.basename(str(item.fspath))
    return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)


def pytest_collection_modifyitems(session, config, items):
    """Modules run longest first (LONGEST_FIRST), each in its own order.

    On CI the UEFI tests must run too: without OVMF they would skip and
    the run pass.

    test_vm.py's Bochs (VMX) tests run after the rest of that module: they
    share one Bochs host, which spins a host core even while idle, and it
    closes with the module."""
    items.sort(key=_module_rank)    # stable: each module keeps its order
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
