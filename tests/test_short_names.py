"""C++ names as perf prints them: the demangled name without its parameter list, method
qualifiers or a function template's return type (libiberty without DMGL_PARAMS). Ground
truth: `c++filt -p -i` on 58,521 real symbols (tests/fixtures/demangle/README.md)."""
import gzip

from analysis.symbols.demangle import demangle, short_name
from conftest import FIXTURES

TRUTH = FIXTURES / "demangle" / "short-names.tsv.gz"


def test_every_symbol_reads_as_perf_prints_it():
    with gzip.open(TRUTH, "rt") as f:
        pairs = [line.rstrip("\n").split("\t") for line in f]
    assert len(pairs) == 58_521
    wrong = [(m, short_name(demangle(m)), want) for m, want in pairs
             if short_name(demangle(m)) != want]
    assert wrong == []


def test_the_issues_examples_and_what_stays_whole():
    full = demangle("_ZNSt6vectorIiSaIiEE17_M_realloc_insertIJiEEEvN9__gnu_cxx17__normal_"
                    "iteratorIPiS1_EEDpOT_")
    assert full.startswith("void std::vector<int, std::allocator<int> >::_M_realloc_insert")
    assert short_name(full) == "std::vector<int, std::allocator<int> >::_M_realloc_insert<int>"
    # operators, versions, special names, C
    assert short_name("std::ostream::operator<<(int)") == "std::ostream::operator<<"
    assert short_name("foo(int)@plt") == "foo@plt"
    assert short_name("vtable for Foo") == "vtable for Foo"
    assert short_name("pthread_mutex_lock@@GLIBC_2.2.5") == "pthread_mutex_lock@@GLIBC_2.2.5"
