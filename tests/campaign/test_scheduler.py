"""The campaign scheduler with simulated sessions: slots filled and freed at once, no GPU given to two
sessions, retries with the reason kept, finished units never run again, CPU jobs beside GPU jobs."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.campaign.pools import Job
from workbench.campaign.records import load_record
from workbench.campaign.scheduler import Scheduler
from workbench.campaign.simulate import SimulatedPool, measure, simulated_campaign
from workbench.campaign.work import UnitStatus
from workbench.errors import UsageError


@pytest.mark.parametrize("slots", [1, 3, 4])
def test_every_slot_is_used_and_never_more(tmp_path: Path, slots: int) -> None:
    # the wall time against the ideal is measured by `d2k-workbench bench campaign` (docs/performance.md),
    # not asserted here: a loaded CI machine would make such a test fail at random
    m = measure(tmp_path, slots, sessions=12, seconds=0.05)
    assert m.peak == slots and m.sessions == 12


def test_no_gpu_is_given_to_two_sessions_and_failures_are_retried_with_their_reason(tmp_path: Path) -> None:
    campaign, units = simulated_campaign(tmp_path, 6)
    pool = SimulatedPool(0.05, gpus=2, fail_first=frozenset({units[1].key, units[4].key}))
    snapshot = Scheduler(campaign, units, pool, status_of=pool.status_of).run()
    pool.close()
    assert pool.overlaps == [] and pool.peak == 2
    assert snapshot.done == 6 and snapshot.failed == 0
    record = load_record(campaign, units[1].key, units[1].session_id)
    assert [(a.state, a.reason) for a in record.attempts] == [("failed", "simulated failure"), ("finished", "")]
    assert {a.gpu for a in record.attempts} <= {"0", "1"}


def test_a_unit_that_keeps_failing_is_given_up_after_its_retries(tmp_path: Path) -> None:
    campaign, units = simulated_campaign(tmp_path, 2)

    class AlwaysFailing(SimulatedPool):
        def status_of(self, unit):  # type: ignore[no-untyped-def]
            if unit.key == units[0].key:
                return UnitStatus("failed", unit.session_id, reason="the provider said 401")
            return super().status_of(unit)

    pool = AlwaysFailing(0.01, gpus=1)
    snapshot = Scheduler(campaign, units, pool, status_of=pool.status_of).run()
    pool.close()
    record = load_record(campaign, units[0].key, units[0].session_id)
    assert len(record.attempts) == 2  # the first try and one retry (retries = 1)
    assert record.gave_up is not None and "the provider said 401" in record.gave_up
    assert snapshot.failed == 1 and snapshot.done == 1
    # a rerun does not try it again, nor the finished one
    again = AlwaysFailing(0.01, gpus=1)
    again.finished = {units[1].key}
    rerun = Scheduler(campaign, units, again, status_of=again.status_of).run()
    again.close()
    assert rerun.failed == 1 and rerun.done == 1 and again.peak == 0


def test_finished_units_are_skipped_and_cpu_jobs_run_beside_gpu_jobs(tmp_path: Path) -> None:
    campaign, units = simulated_campaign(tmp_path, 4)
    pool = SimulatedPool(0.05, gpus=1)
    pool.finished = {units[0].key}
    started: list[Job] = []
    original = pool.submit

    def spy(job, gpu):  # type: ignore[no-untyped-def]
        started.append(job)
        return original(job, gpu)

    pool.submit = spy  # type: ignore[method-assign]
    Scheduler(campaign, units, pool, status_of=pool.status_of).run()
    pool.close()
    assert units[0].key not in {j.key for j in started} and len(started) == 3
    # a CPU campaign: sessions take the CPU slots (2 at once), no GPU is asked for
    cpu_campaign, cpu_units = simulated_campaign(tmp_path / "cpu", 4, device="cpu", cpu_slots=2)
    cpu_pool = SimulatedPool(0.05, gpus=0)
    Scheduler(cpu_campaign, cpu_units, cpu_pool, status_of=cpu_pool.status_of).run()
    cpu_pool.close()
    assert cpu_pool.peak == 2 and cpu_pool.gpu_in_use == {}


def test_a_gpu_campaign_without_a_gpu_is_a_usage_error(tmp_path: Path) -> None:
    campaign, units = simulated_campaign(tmp_path, 2)
    pool = SimulatedPool(0.01, gpus=0)
    with pytest.raises(UsageError, match="no GPU is available"):
        Scheduler(campaign, units, pool, status_of=pool.status_of).run()
    pool.close()


def test_with_a_judge_each_finished_session_is_judged_once_on_a_cpu_slot(tmp_path: Path) -> None:
    from workbench.campaign.spec import JudgeEntry

    campaign, units = simulated_campaign(tmp_path, 3, cpu_slots=1)
    campaign = campaign.model_copy(
        update={"spec": campaign.spec.model_copy(update={"judge": JudgeEntry(provider="anthropic", model="j")})}
    )
    pool = SimulatedPool(0.02, gpus=2)
    snapshot = Scheduler(campaign, units, pool, status_of=pool.status_of).run()
    pool.close()
    assert snapshot.done == 3 and pool.judged == {u.key for u in units}
    for unit in units:  # run first, then one judge job
        assert [step for key, step in pool.steps if key == unit.key] == ["run", "judge"]
    again = SimulatedPool(0.02, gpus=2)
    again.finished, again.judged = set(pool.finished), set(pool.judged)
    Scheduler(campaign, units, again, status_of=again.status_of).run()
    again.close()
    assert again.steps == []  # judged sessions are neither run nor judged again


def test_retry_failed_gives_a_given_up_unit_its_retries_again(tmp_path: Path) -> None:
    campaign, units = simulated_campaign(tmp_path, 1)
    failing = UnitStatus("failed", units[0].session_id, reason="rate limited for good")

    class Failing(SimulatedPool):
        def status_of(self, unit):  # type: ignore[no-untyped-def]
            return failing if unit.key not in self.finished else super().status_of(unit)

        def _job(self, job, gpu):  # type: ignore[no-untyped-def]
            result = super()._job(job, gpu)
            self.finished.discard(job.key)  # every attempt fails
            return result

    pool = Failing(0.01, gpus=1)
    Scheduler(campaign, units, pool, status_of=pool.status_of).run()
    pool.close()
    assert load_record(campaign, units[0].key, units[0].session_id).gave_up
    fixed = SimulatedPool(0.01, gpus=1)
    snapshot = Scheduler(campaign, units, fixed, status_of=fixed.status_of, retry_failed=True).run()
    fixed.close()
    record = load_record(campaign, units[0].key, units[0].session_id)
    assert snapshot.done == 1 and record.gave_up is None and len(record.attempts) == 3  # 2 failed + 1 finished, all kept


def test_the_gpus_used_are_of_one_device_model() -> None:
    from workbench.campaign.pools import choose_gpus

    present = {0: "NVIDIA H200", 1: "NVIDIA H200", 2: "NVIDIA H100 80GB HBM3"}
    assert choose_gpus(present, "all", "H200") == [0, 1]
    assert choose_gpus(present, [1, 2], "h100") == [2]
    assert choose_gpus(present, [0, 1, 5], None) == [0, 1]  # an index not present is left out
    assert choose_gpus(present, "all", "A100") == []
    with pytest.raises(UsageError, match=r"2 models .* set gpu_model"):
        choose_gpus(present, "all", None)  # paired sessions must not be timed on two device models
