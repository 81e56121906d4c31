#!/usr/bin/python3
"""Print the test cases of one vm test file, one `Class.test_method` per
line, as unittest's loader finds them (nothing is booted: the file is only
imported). CMake runs this at configure time (crx_add_vm_cases in
tests/vm/CMakeLists.txt), so a case added to a file becomes a ctest of its
own without being listed by hand anywhere.

  list_cases.py <test file> [Class ...]   only the cases of these classes
"""
import importlib.util
import os
import sys
import unittest


def cases(path, classes=()):
    here = os.path.dirname(os.path.abspath(__file__))
    for d in (here, os.path.dirname(os.path.abspath(path))):
        if d not in sys.path:
            sys.path.insert(0, d)
    spec = importlib.util.spec_from_file_location("vm_cases_of_file", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def walk(suite):
        for t in suite:
            if isinstance(t, unittest.TestSuite):
                yield from walk(t)
            else:
                yield t

    found = []
    for t in walk(unittest.defaultTestLoader.loadTestsFromModule(module)):
        cls = type(t).__name__
        if not classes or cls in classes:
            found.append(f"{cls}.{t._testMethodName}")
    return found


def main():
    if len(sys.argv) < 2:
        raise SystemExit("usage: list_cases.py <test file> [Class ...]")
    found = cases(sys.argv[1], sys.argv[2:])
    if not found:
        raise SystemExit(f"{sys.argv[1]}: no test cases" +
                         (f" in {', '.join(sys.argv[2:])}" if sys.argv[2:] else ""))
    print("\n".join(found))


if __name__ == "__main__":
    main()
