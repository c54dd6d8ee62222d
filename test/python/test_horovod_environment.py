"""Horovod's HOROVOD_* variables read as Chorus's (horovod_environment.apply
on a dict, as init() applies it to os.environ); the launched run is
launch/horovod_environment_probe.py."""
import pytest

from chorus.torch import horovod_environment


def test_equivalents_are_copied_in_chorus_units():
    env = {"HOROVOD_TIMELINE": "/tmp/t.json", "HOROVOD_TIMELINE_MARK_CYCLES": "1",
           "HOROVOD_FUSION_THRESHOLD": "33554432", "HOROVOD_CYCLE_TIME": "3.5",
           "HOROVOD_CACHE_CAPACITY": "0", "HOROVOD_STALL_CHECK_TIME_SECONDS": "20",
           "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": "90", "HOROVOD_LOG_LEVEL": "FATAL",
           "HOROVOD_HIERARCHICAL_ALLREDUCE": "1", "HOROVOD_AUTOTUNE": "true",
           "HOROVOD_AUTOTUNE_LOG": "/tmp/a.csv", "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE": "7",
           "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES": "12", "PATH": "/bin"}
    assert horovod_environment.apply(env) == []
    assert {k: v for k, v in env.items() if k.startswith("CHORUS_")} == {
        "CHORUS_TIMELINE": "/tmp/t.json", "CHORUS_TIMELINE_MARK_CYCLES": "1",
        "CHORUS_FUSION_THRESHOLD": "33554432", "CHORUS_CYCLE_TIME_MS": "3.5",
        "CHORUS_CACHE_CAPACITY": "0", "CHORUS_STALL_CHECK_SECONDS": "20.0",
        "CHORUS_STALL_SHUTDOWN_SECONDS": "90.0", "CHORUS_LOG_LEVEL": "error",
        "CHORUS_HIERARCHICAL_ALLREDUCE": "on", "CHORUS_AUTOTUNE": "1",
        "CHORUS_AUTOTUNE_LOG": "/tmp/a.csv", "CHORUS_AUTOTUNE_STEPS_PER_SAMPLE": "7",
        "CHORUS_AUTOTUNE_SAMPLES": "12"}


def test_dynamic_timeline_and_disabled_stall_check():
    # HOROVOD_TIMELINE=DYNAMIC only permits start_timeline() later: no file.
    env = {"HOROVOD_TIMELINE": "DYNAMIC", "HOROVOD_STALL_CHECK_DISABLE": "1"}
    horovod_environment.apply(env)
    assert env["CHORUS_TIMELINE"] == "" and env["CHORUS_STALL_CHECK_SECONDS"] == "0"
    env = {"HOROVOD_STALL_CHECK_DISABLE": "0"}
    horovod_environment.apply(env)
    assert "CHORUS_STALL_CHECK_SECONDS" not in env


def test_an_explicit_chorus_variable_wins_and_a_conflict_is_named():
    env = {"HOROVOD_FUSION_THRESHOLD": "1024", "CHORUS_FUSION_THRESHOLD": "2048",
           "HOROVOD_CYCLE_TIME": "5", "CHORUS_CYCLE_TIME_MS": "5.0"}
    notes = horovod_environment.apply(env)
    assert env["CHORUS_FUSION_THRESHOLD"] == "2048" and env["CHORUS_CYCLE_TIME_MS"] == "5.0"
    assert notes == ["HOROVOD_FUSION_THRESHOLD=1024 is ignored: CHORUS_FUSION_THRESHOLD=2048 is set and wins"]


def test_settings_chorus_lacks_are_named_and_launcher_variables_are_not():
    env = {"HOROVOD_NUM_NCCL_STREAMS": "2", "HOROVOD_RANK": "0", "HOROVOD_HOSTNAME": "h1"}
    notes = horovod_environment.apply(env)
    assert notes == ["HOROVOD_NUM_NCCL_STREAMS is a Horovod setting that Chorus does not have; it is ignored "
                     "(docs/CONFIGURATION.md lists Chorus's)"]
    assert not any(k.startswith("CHORUS_") for k in env)


@pytest.mark.parametrize("name, value, expected", [
    ("HOROVOD_FUSION_THRESHOLD", "64MB", "a number of bytes (Chorus reads it as CHORUS_FUSION_THRESHOLD)"),
    ("HOROVOD_FUSION_THRESHOLD", "-1", "a number of bytes"),
    ("HOROVOD_CYCLE_TIME", "fast", "a number of milliseconds (Chorus reads it as CHORUS_CYCLE_TIME_MS)"),
    ("HOROVOD_CYCLE_TIME", "nan", "a number of milliseconds"),
    ("HOROVOD_TIMELINE_MARK_CYCLES", "maybe", "0 or 1"),
    ("HOROVOD_LOG_LEVEL", "loud", "one of trace, debug, info, warning, error, fatal"),
])
def test_a_value_chorus_cannot_read_names_the_horovod_variable(name, value, expected):
    env = {name: value}
    with pytest.raises(ValueError) as info:
        horovod_environment.apply(env)
    assert str(info.value).startswith("%s=%r: expected %s" % (name, value, expected))
    assert not any(k.startswith("CHORUS_") for k in env)
