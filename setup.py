"""pip install . : builds Chorus's Python extension with the project's CMake
(only the targets the package needs, in build-python/) and installs the
package chorus. Offline and without build isolation: there is deliberately
no pyproject.toml, so pip uses the interpreter's own setuptools (Debian:
python3-setuptools); run it with the interpreter whose torch the package is
for, e.g. /usr/bin/python3 -m pip install --target DIR . or a venv made with
/usr/bin/python3 -m venv --system-site-packages.
CHORUS_BUILD_JOBS=N limits the build's parallelism. CHORUS_PYTHON_BUILD_DIR=DIR
uses an existing build tree of this checkout configured with the Python
package (e.g. scripts/build.sh's build/) instead of configuring build-python/:
only the extension's target is brought up to date there."""
import os
import shutil
import subprocess
import sys

from setuptools import setup, Extension
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = os.environ.get("CHORUS_PYTHON_BUILD_DIR")
        if build_dir:
            if not os.path.isfile(os.path.join(build_dir, "CMakeCache.txt")):
                raise RuntimeError("CHORUS_PYTHON_BUILD_DIR=%s is not a configured CMake build tree "
                                   "(expected its CMakeCache.txt, e.g. build/ after scripts/build.sh)"
                                   % build_dir)
        else:
            build_dir = os.path.join(ROOT, "build-python")
            # The interpreter running pip: in a venv its sys.executable is the
            # venv's, whose prefix has torch through --system-site-packages.
            configure = ["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                         "-DCHORUS_BUILD_TESTS=OFF", "-DCHORUS_WITH_PYTHON=ON",
                         "-DCHORUS_PYTHON_EXECUTABLE=" + sys.executable]
            if shutil.which("ninja"):
                configure += ["-G", "Ninja"]
            subprocess.check_call(configure)
        jobs = os.environ.get("CHORUS_BUILD_JOBS", str(os.cpu_count() or 1))
        subprocess.check_call(["cmake", "--build", build_dir, "-j", jobs, "--target", "chorus_python"])
        built = os.path.join(build_dir, "python", "chorus")
        target = os.path.dirname(self.get_ext_fullpath(ext.name))
        # The extension and the pure-Python modules, as CMake assembled them.
        shutil.copytree(built, target, dirs_exist_ok=True)


setup(
    name="chorus",
    version="0.1.0",
    description="Chorus distributed training runtime; chorus.torch has horovod.torch's API",
    packages=["chorus", "chorus.torch", "chorus.torch.elastic"],
    package_dir={"": "frameworks/python"},
    ext_modules=[Extension("chorus._chorus", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.8",
    zip_safe=False,
    # setuptools' own scratch space, away from CMake's build/.
    options={"build": {"build_base": "build-python/setuptools"}},
)
