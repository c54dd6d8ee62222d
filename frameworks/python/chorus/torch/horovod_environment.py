"""Horovod's environment variables, read as Chorus's.

A Horovod job is tuned and traced by HOROVOD_* variables in its launch
script (HOROVOD_TIMELINE=..., HOROVOD_FUSION_THRESHOLD=...). Changing the
import line must not silently drop them, so init() copies each one Chorus has
an equivalent for into that CHORUS_* variable (converted to its units) before
the runtime reads its settings, and warns about the others. A CHORUS_*
variable set explicitly wins. A value Chorus cannot read is an error that
names the HOROVOD_* variable, not the CHORUS_* one the user never set."""
import math
import os
import warnings


def _number(text):
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _integer(text):
    try:
        return int(text.strip())
    except ValueError:
        return None


def _switch(text):
    # Horovod reads its switches as integers ("1" on, "0" off) and also takes
    # "true"/"false" in its runner.
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    return None


def _as_non_negative_integer(text):
    n = _integer(text)
    return None if n is None or n < 0 else str(n)


def _as_non_negative_number(text):
    x = _number(text)
    return None if x is None or x < 0 else repr(x)


def _as_switch(text):
    on = _switch(text)
    return None if on is None else ("1" if on else "0")


def _as_on_off(text):
    on = _switch(text)
    return None if on is None else ("on" if on else "off")


def _as_path(text):
    # HOROVOD_TIMELINE=DYNAMIC only lets Horovod start a timeline later with
    # start_timeline(), which Chorus always allows: no file.
    return "" if text == "DYNAMIC" else text


_UNCHANGED = object()  # a conversion's "leave the Chorus variable as it is"

_LOG_LEVELS = {"trace": "trace", "debug": "debug", "info": "info", "warning": "warning",
               "error": "error", "fatal": "error"}


def _as_stall_check_off(text):
    # Only HOROVOD_STALL_CHECK_DISABLE=1 says something: the check's period 0.
    off = _switch(text)
    return None if off is None else ("0" if off else _UNCHANGED)


def _as_log_level(text):
    return _LOG_LEVELS.get(text.strip().lower())


# HOROVOD_* -> (CHORUS_*, conversion, what Horovod expects there).
_INTEGER, _NUMBER = _as_non_negative_integer, _as_non_negative_number
_EQUIVALENTS = {
    "HOROVOD_TIMELINE": ("CHORUS_TIMELINE", _as_path, "a file path"),
    "HOROVOD_TIMELINE_MARK_CYCLES": ("CHORUS_TIMELINE_MARK_CYCLES", _as_switch, "0 or 1"),
    "HOROVOD_FUSION_THRESHOLD": ("CHORUS_FUSION_THRESHOLD", _INTEGER, "a number of bytes"),
    "HOROVOD_CYCLE_TIME": ("CHORUS_CYCLE_TIME_MS", _NUMBER, "a number of milliseconds"),
    "HOROVOD_CACHE_CAPACITY": ("CHORUS_CACHE_CAPACITY", _INTEGER, "a number of entries"),
    "HOROVOD_STALL_CHECK_TIME_SECONDS": ("CHORUS_STALL_CHECK_SECONDS", _NUMBER, "a number of seconds"),
    "HOROVOD_STALL_CHECK_DISABLE": ("CHORUS_STALL_CHECK_SECONDS", _as_stall_check_off, "0 or 1"),
    "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": ("CHORUS_STALL_SHUTDOWN_SECONDS", _NUMBER, "a number of seconds"),
    "HOROVOD_LOG_LEVEL": ("CHORUS_LOG_LEVEL", _as_log_level,
                          "one of trace, debug, info, warning, error, fatal"),
    "HOROVOD_HIERARCHICAL_ALLREDUCE": ("CHORUS_HIERARCHICAL_ALLREDUCE", _as_on_off, "0 or 1"),
    "HOROVOD_AUTOTUNE": ("CHORUS_AUTOTUNE", _as_switch, "0 or 1"),
    "HOROVOD_AUTOTUNE_LOG": ("CHORUS_AUTOTUNE_LOG", _as_path, "a file path"),
    "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE": ("CHORUS_AUTOTUNE_STEPS_PER_SAMPLE", _INTEGER, "a number of steps"),
    "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES": ("CHORUS_AUTOTUNE_SAMPLES", _INTEGER, "a number of samples"),
}

# Set by Horovod's launchers for its own runtime's rendezvous (horovodrun,
# its Gloo and Spark modes): nothing to tune, and Chorus takes the same facts
# from MPI or Slurm.
_LAUNCHER_VARIABLES = {
    "HOROVOD_RANK", "HOROVOD_SIZE", "HOROVOD_LOCAL_RANK", "HOROVOD_LOCAL_SIZE", "HOROVOD_CROSS_RANK",
    "HOROVOD_CROSS_SIZE", "HOROVOD_HOSTNAME", "HOROVOD_CONTROLLER", "HOROVOD_CPU_OPERATIONS",
    "HOROVOD_ELASTIC", "HOROVOD_GLOO_RENDEZVOUS_ADDR", "HOROVOD_GLOO_RENDEZVOUS_PORT", "HOROVOD_GLOO_IFACE",
    "HOROVOD_GLOO_TIMEOUT_SECONDS", "HOROVOD_SECRET_KEY",
}


def apply(environ=None):
    """Copies the HOROVOD_* variables of `environ` (os.environ by default)
    that have a Chorus equivalent into it; returns the warnings, one line
    each, for variables left unused. Raises ValueError for a value that
    cannot be read."""
    environ = os.environ if environ is None else environ
    notes = []
    for name in sorted(k for k in environ if k.startswith("HOROVOD_")):
        text = environ[name]
        if name in _EQUIVALENTS:
            target, convert, expected = _EQUIVALENTS[name]
            value = convert(text)
            if value is None:
                raise ValueError("%s=%r: expected %s (Chorus reads it as %s)" % (name, text, expected, target))
            if value is _UNCHANGED:
                continue
            if target in environ:
                if environ[target] != value:
                    notes.append("%s=%s is ignored: %s=%s is set and wins" % (name, text, target, environ[target]))
                continue
            environ[target] = value
        elif name not in _LAUNCHER_VARIABLES:
            notes.append("%s is a Horovod setting that Chorus does not have; it is ignored "
                         "(docs/CONFIGURATION.md lists Chorus's)" % name)
    return notes


def apply_and_warn():
    for note in apply():
        warnings.warn("chorus.torch: " + note, RuntimeWarning, stacklevel=3)
