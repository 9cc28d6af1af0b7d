"""The `threads` setting: applied once by the composition root to torch, OpenMP and BLAS."""

from __future__ import annotations

import os

import pytest

from bot.app import THREAD_ENV, apply_threads
from config.settings import load_settings


@pytest.fixture
def restore_threads(monkeypatch):
    import torch
    from threadpoolctl import threadpool_info, threadpool_limits

    before, pools = torch.get_num_threads(), threadpool_info()
    for var in THREAD_ENV:
        monkeypatch.delenv(var, raising=False)  # monkeypatch puts back what was there
    yield torch
    torch.set_num_threads(before)
    for pool in pools:
        threadpool_limits({pool["prefix"]: pool["num_threads"]})


def test_threads_zero_means_the_cores_this_process_may_use(restore_threads):
    n = apply_threads(load_settings(env={}))
    assert n == len(os.sched_getaffinity(0))
    assert all(os.environ[var] == str(n) for var in THREAD_ENV)
    assert restore_threads.get_num_threads() == n


def test_a_thread_count_is_applied_to_torch_blas_and_the_environment(restore_threads):
    from threadpoolctl import threadpool_info

    assert apply_threads(load_settings(env={"RAVBOT_THREADS": "1"})) == 1
    assert restore_threads.get_num_threads() == 1
    assert all(os.environ[var] == "1" for var in THREAD_ENV)
    assert all(pool["num_threads"] == 1 for pool in threadpool_info())


def test_omp_num_threads_sets_the_setting_and_ravbot_threads_wins():
    assert load_settings(env={"OMP_NUM_THREADS": "3"}).threads == 3
    assert load_settings(env={"OMP_NUM_THREADS": "3", "RAVBOT_THREADS": "2"}).threads == 2
    with pytest.raises(ValueError, match="threads"):
        load_settings(env={"RAVBOT_THREADS": "many"})


def test_a_negative_thread_count_is_refused(restore_threads):
    with pytest.raises(ValueError, match="threads"):
        apply_threads(load_settings(env={"RAVBOT_THREADS": "-1"}))
