"""The native build cache is pruned after a build: this checkout's older builds for the same torch
version go, unless a process holds their lock; other checkouts', other versions' and newer
folders stay. Fake folders only: a real build takes minutes."""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path

import pytest

from runtime_shim.backend import native, native_cache

VERSION = "native-torch2.13.0+cpu"
CSRC = Path("/checkout/a/runtime_shim/csrc")
OTHER = Path("/checkout/b/runtime_shim/csrc")


def _folder(root: Path, name: str, csrc: Path | None, age: float = 0.0, ninja: bool = False) -> Path:
    """A fake build folder `age` seconds old, built from `csrc` (by marker, or by build.ninja)."""
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "runtime_shim_native.so").write_bytes(b"\x7fELF")
    if csrc is not None and ninja:
        (folder / "build.ninja").write_text(
            f"ninja_required_version = 1.3\nbuild npu_hooks.o: compile {csrc}/npu_hooks.cpp\n"
            f"build npu_dispatch.o: compile {csrc}/npu_dispatch.cpp\n"
        )
    elif csrc is not None:
        native_cache.mark_source(folder, csrc)
    stamp = time.time() - age
    os.utime(folder / "runtime_shim_native.so", (stamp, stamp))
    os.utime(folder, (stamp, stamp))
    return folder


@pytest.fixture
def cache(tmp_path: Path) -> tuple[Path, Path]:
    current = _folder(tmp_path, f"{VERSION}-cccccccccccc", CSRC)
    return tmp_path, current


def test_older_builds_of_this_checkout_are_removed(cache) -> None:
    root, current = cache
    marked = _folder(root, f"{VERSION}-aaaaaaaaaaaa", CSRC, age=600)
    from_ninja = _folder(root, f"{VERSION}-bbbbbbbbbbbb", CSRC, age=60, ninja=True)  # built before the marker
    assert sorted(native_cache.prune(current, CSRC)) == [marked, from_ninja]
    assert sorted(p.name for p in root.iterdir()) == [current.name]
    assert (current / "runtime_shim_native.so").exists()


def test_what_is_not_this_checkouts_older_build_stays(cache) -> None:
    root, current = cache
    kept = [
        _folder(root, f"{VERSION}-111111111111", OTHER, age=600),  # another checkout sharing the cache
        _folder(root, f"{VERSION}-222222222222", OTHER, age=600, ninja=True),
        _folder(root, f"{VERSION}-333333333333", None, age=600),  # origin unknown
        _folder(root, f"{VERSION}-444444444444", CSRC, age=-600),  # newer: another process's build
        _folder(root, "native-torch2.12.0+cpu-555555555555", CSRC, age=600),  # another torch version
        _folder(root, "native-torch2.13.0+cpu.post1-666666666666", CSRC, age=600),
        _folder(root, "other-777777777777", CSRC, age=600),
    ]
    (root / f"{VERSION}-888888888888").symlink_to(kept[0])
    (root / f"{VERSION}-999999999999").write_text("a file")
    assert native_cache.prune(current, CSRC) == []
    assert all((folder / "runtime_shim_native.so").exists() for folder in kept)
    assert (root / f"{VERSION}-888888888888").is_symlink() and (root / f"{VERSION}-999999999999").is_file()


def test_a_folder_whose_lock_is_held_stays(cache) -> None:
    root, current = cache
    busy = _folder(root, f"{VERSION}-aaaaaaaaaaaa", CSRC, age=600)
    free = _folder(root, f"{VERSION}-bbbbbbbbbbbb", CSRC, age=600)
    with open(busy / native_cache.LOCK, "a") as held:  # a process building or loading there
        fcntl.flock(held, fcntl.LOCK_EX)
        assert native_cache.prune(current, CSRC) == [free]
        assert (busy / "runtime_shim_native.so").exists()
    assert native_cache.prune(current, CSRC) == [busy]  # released: stale now


def test_age_is_the_builds_not_the_folders(cache) -> None:
    root, current = cache
    loaded = _folder(root, f"{VERSION}-aaaaaaaaaaaa", CSRC, age=600)
    (loaded / ".ninja_log").write_text("")  # a load since: the folder's time is now, the build's is not
    failed = _folder(root, f"{VERSION}-bbbbbbbbbbbb", CSRC, age=600)
    (failed / "runtime_shim_native.so").unlink()
    os.utime(failed, (time.time() - 600,) * 2)
    assert native_cache.prune(current, CSRC) == [loaded, failed]


def test_a_killed_prunings_leftover_goes_and_a_running_ones_stays(cache) -> None:
    root, current = cache
    dead = root / f".{VERSION}-aaaaaaaaaaaa.pruned-999999999"
    running = root / f".{VERSION}-bbbbbbbbbbbb.pruned-{os.getpid()}"
    dead.mkdir()
    running.mkdir()
    native_cache.prune(current, CSRC)
    assert not dead.exists() and running.exists()


def test_a_process_waiting_on_a_folder_pruned_meanwhile_makes_it_anew(tmp_path: Path) -> None:
    folder = _folder(tmp_path, f"{VERSION}-aaaaaaaaaaaa", CSRC)
    entered: list[bool] = []
    holder = open(folder / native_cache.LOCK, "a")
    fcntl.flock(holder, fcntl.LOCK_EX)

    def load() -> None:
        with native._one_build_at_a_time(folder):
            entered.append(
                (folder / native_cache.LOCK).exists() and not (folder / "runtime_shim_native.so").exists()
            )

    waiter = threading.Thread(target=load)
    waiter.start()
    time.sleep(0.3)  # the waiter has opened the lock file and waits on it
    os.rename(folder, folder.with_name("renamed"))  # what prune does under the lock
    holder.close()
    waiter.join(timeout=10)
    assert entered == [True]  # locked the folder made anew at its path, not the one renamed away


def test_a_build_prunes_and_a_load_of_an_existing_build_does_not(tmp_path: Path, monkeypatch) -> None:
    from torch.utils import cpp_extension

    monkeypatch.setenv(native.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(native, "compiler", lambda: "c++")
    loads: list[str] = []

    def fake_load(name, sources, build_directory, **kwargs):
        loads.append(build_directory)
        (Path(build_directory) / f"{name}.so").write_bytes(b"\x7fELF")
        return object()

    monkeypatch.setattr(cpp_extension, "load", fake_load)
    imports: list[Path] = []
    monkeypatch.setattr(native, "_import_built", lambda folder: imports.append(folder) or object())
    current = native.build_directory()
    stale = _folder(tmp_path, f"{current.name.rsplit('-', 1)[0]}-000000000000", native._CSRC, age=600)
    elsewhere = _folder(tmp_path, f"{current.name.rsplit('-', 1)[0]}-111111111111", OTHER, age=600)
    assert native.load() is not None
    assert not stale.exists() and elsewhere.exists()
    assert native_cache.origin(current) == str(native._CSRC)
    stale = _folder(tmp_path, stale.name, native._CSRC, age=600)
    assert native.load() is not None  # loaded from the cache: no build, no pruning
    assert stale.exists() and len(loads) == 1 and imports == [current]
