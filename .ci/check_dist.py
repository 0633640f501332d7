"""The built distributions agree with the supported range that pyproject.toml declares.

Usage (from the repository root, with the interpreter the wheel was built by)::

    python .ci/check_dist.py DIST_DIR --oldest 3.9 --newest 3.13

DIST_DIR holds one sdist and one wheel (``python -m build``).  Checks, each failing with the
reason:

* the wheel is a CPython extension wheel for the running interpreter (``cpXY-cpXY-<platform>``,
  not pure Python) and the running interpreter is inside ``requires-python``;
* the wheel's METADATA and the sdist's PKG-INFO both say pyproject's ``Requires-Python``,
  its runtime ``Requires-Dist`` and its classifiers;
* the ``Programming Language :: Python :: 3.N`` classifiers are exactly --oldest .. --newest
  (the interpreters .ci/run tests), and --oldest is ``requires-python``'s floor;
* every floor (runtime dependencies and build-system requires) is pinned in
  .ci/constraints-oldest.txt to a release of the floor's own series (``>=1.11`` -> ``1.11.*``),
  so the oldest run tests the declared floors and not something newer;
* README.md states the same range (Python, then each runtime dependency's floor).

Needs ``packaging`` (and ``tomli`` before Python 3.11), which ``build`` brings.
"""
import argparse
import email.parser
import re
import sys
import tarfile
import zipfile
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import parse_wheel_filename
from packaging.version import Version

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
CONSTRAINTS = ROOT / ".ci" / "constraints-oldest.txt"
PY_CLASSIFIER = re.compile(r"Programming Language :: Python :: (3\.\d+)$")


def _metadata(text):
    msg = email.parser.Parser().parsestr(text)
    return {
        "Requires-Python": msg.get("Requires-Python"),
        # runtime requirements only: the extras carry an 'extra == ...' marker
        "Requires-Dist": sorted(str(Requirement(r)) for r in msg.get_all("Requires-Dist", [])
                                if "extra ==" not in r),
        "Classifier": sorted(msg.get_all("Classifier", [])),
    }


def _floor(requirement):
    """The X.Y... of a requirement's single '>=' clause."""
    (spec,) = [s for s in Requirement(requirement).specifier if s.operator == ">="]
    return Version(spec.version)


def _pins():
    pins = {}
    for line in CONSTRAINTS.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins[name.strip().lower()] = Version(version.strip())
    return pins


def check(dist_dir, oldest, newest):
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    meta = project["project"]
    errors = []

    def expect(ok, message):
        if not ok:
            errors.append(message)

    requires_python = SpecifierSet(meta["requires-python"])
    expected = {
        "Requires-Python": str(requires_python),
        "Requires-Dist": sorted(str(Requirement(r)) for r in meta["dependencies"]),
        "Classifier": sorted(meta["classifiers"]),
    }

    # the wheel: tags and metadata
    (wheel,) = Path(dist_dir).glob("*.whl")
    _, _, _, tags = parse_wheel_filename(wheel.name)
    here = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    running = f"{sys.version_info[0]}.{sys.version_info[1]}.{sys.version_info[2]}"
    for tag in tags:
        expect(tag.interpreter == here and tag.abi == here and tag.platform != "any",
               f"{wheel.name}: tag {tag} is not a {here} extension-module tag")
    expect(running in requires_python,
           f"Python {running} built a wheel outside requires-python {requires_python}")
    with zipfile.ZipFile(wheel) as zf:
        (meta_path,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        (wheel_path,) = [n for n in zf.namelist() if n.endswith(".dist-info/WHEEL")]
        wheel_meta = _metadata(zf.read(meta_path).decode())
        wheel_file = zf.read(wheel_path).decode()
        kernels = [n for n in zf.namelist() if n.startswith("skstoch/_fast/") and
                   n.endswith(".so")]
    expect("Root-Is-Purelib: false" in wheel_file, f"{wheel.name} says it is pure Python")
    expect(kernels and all(f".cpython-{here[2:]}-" in k for k in kernels),
           f"{wheel.name}: kernels {kernels} are not built for {here}")

    # the sdist's metadata
    (sdist,) = Path(dist_dir).glob("*.tar.gz")
    with tarfile.open(sdist) as tar:
        (info,) = [m for m in tar.getnames() if m.count("/") == 1 and m.endswith("/PKG-INFO")]
        sdist_meta = _metadata(tar.extractfile(info).read().decode())
    for where, got in ((wheel.name, wheel_meta), (sdist.name, sdist_meta)):
        for field, value in expected.items():
            expect(got[field] == value, f"{where}: {field} is {got[field]}, pyproject says {value}")

    # the classifiers name exactly the interpreters CI tests, from requires-python's floor
    minors = sorted((Version(m) for c in meta["classifiers"] for m in PY_CLASSIFIER.findall(c)))
    want = [Version(f"3.{m}") for m in range(Version(oldest).minor, Version(newest).minor + 1)]
    expect(minors == want, f"Python classifiers {[str(m) for m in minors]}, CI tests "
                           f"{oldest}..{newest}")
    expect(str(requires_python) == f">={oldest}",
           f"requires-python {requires_python} does not start at the oldest tested {oldest}")

    # the oldest run pins every floor
    pins = _pins()
    floors = meta["dependencies"] + project["build-system"]["requires"]
    for requirement in floors:
        name, floor = Requirement(requirement).name.lower(), _floor(requirement)
        pin = pins.get(name)
        expect(pin is not None and pin in Requirement(requirement).specifier
               and pin.release[:len(floor.release)] == floor.release,
               f"{CONSTRAINTS.name} pins {name}=={pin}, not a release of the floor {floor}")

    # README.md states the same range
    readme = (ROOT / "README.md").read_text()
    for text in [f"Python {oldest}", f"Python {oldest}\u2013{newest}"] + [
            f"{Requirement(r).name} >= {_floor(r)}" for r in meta["dependencies"]]:
        expect(text in readme, f"README.md does not say {text!r}")

    return errors


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dist_dir")
    parser.add_argument("--oldest", required=True, help="oldest tested Python, X.Y")
    parser.add_argument("--newest", required=True, help="newest tested Python, X.Y")
    args = parser.parse_args()
    errors = check(args.dist_dir, args.oldest, args.newest)
    for error in errors:
        print(f"check_dist: {error}", file=sys.stderr)
    if errors:
        sys.exit(1)
    print(f"check_dist: wheel and sdist agree with pyproject.toml and README.md "
          f"(Python {args.oldest}-{args.newest})")


if __name__ == "__main__":
    main()
