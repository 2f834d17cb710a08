"""One identity per function across builds: names as demanglers and perf print them."""
import pytest

from analysis.identity import function_identity, function_key, library_identity


@pytest.mark.parametrize("name, identity", [
    # C and the kernel: GCC's clone suffixes (seen in the public corpus's kernel stacks)
    ("do_sock_write.isra.1", "do_sock_write"),
    ("sock_aio_read.part.1", "sock_aio_read"),
    ("visit_groups_merge.constprop.0", "visit_groups_merge"),
    ("finish_task_switch.isra.0", "finish_task_switch"),
    ("tcache_init.part.0", "tcache_init"),
    ("main._omp_fn.0", "main"),
    ("foo.cold", "foo"),
    ("bar.lto_priv.0", "bar"),
    ("baz.llvm.8541375634529743219", "baz"),
    ("pthread_mutex_lock@@GLIBC_2.2.5", "pthread_mutex_lock"),
    ("memcpy@plt", "memcpy@plt"),
    # C++, demangled: no parameters, qualifiers, return type or clone suffix
    ("pick_batch(std::vector<Job, std::allocator<Job> >&) [clone .isra.0]", "pick_batch"),
    ("pick_batch(std::vector<Job, std::allocator<Job> >&)", "pick_batch"),
    ("qualla::ThreadPool::loop()", "qualla::ThreadPool::loop"),
    ("void std::vector<int, std::allocator<int> >::_M_realloc_insert<int>"
     "(__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > >, int&&)",
     "std::vector<int, std::allocator<int> >::_M_realloc_insert<int>"),
    ("std::_Function_handler<void (), engine_submit::{lambda()#1}>::_M_invoke"
     "(std::_Any_data const&)",
     "std::_Function_handler<void (), engine_submit::{lambda()#1}>::_M_invoke"),
    ("gateway::RequestHandler::handle(Request const&) const", "gateway::RequestHandler::handle"),
    ("std::__cxx11::basic_string<char>::_M_mutate(unsigned long, unsigned long, char const*,"
     " unsigned long) [clone .constprop.0] [clone .isra.0]",
     "std::__cxx11::basic_string<char>::_M_mutate"),
    ("operator new(unsigned long)", "operator new"),
    ("operator delete[](void*)", "operator delete[]"),
    ("Matrix::operator()(int, int) const", "Matrix::operator()"),
    ("Foo::operator<(Foo const&) const", "Foo::operator<"),
    ("std::basic_ostream<char, std::char_traits<char> >& std::operator<< "
     "<std::char_traits<char> >(std::basic_ostream<char, std::char_traits<char> >&, "
     "char const*)", "std::operator<< <std::char_traits<char> >"),
    ("(anonymous namespace)::worker(void*)", "(anonymous namespace)::worker"),
    ("Widget::name[abi:cxx11]() const", "Widget::name"),
    # other languages and unnamed frames stay as they are
    ("<alloc::vec::Vec<T,A> as core::ops::drop::Drop>::drop",
     "<alloc::vec::Vec<T,A> as core::ops::drop::Drop>::drop"),
    ("main.(*Server).handle.func1", "main.(*Server).handle.func1"),
    ("_PyEval_EvalFrameDefault", "_PyEval_EvalFrameDefault"),
    ("libqualla.so+0x2458", "libqualla.so+0x2458"),
    ("[unknown]", "[unknown]"),
])
def test_function_identity(name, identity):
    assert function_identity(name) == identity


@pytest.mark.parametrize("path, identity", [
    ("/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30", "libstdc++.so"),
    ("/usr/lib/x86_64-linux-gnu/libc.so.6", "libc.so"),
    ("/opt/qualla-1.0.0/lib/libqualla.so", "libqualla.so"),
    ("/usr/lib/x86_64-linux-gnu/libLLVM-15.so.1", "libLLVM.so"),
    ("/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0", "libpython3.11.so"),
    ("/opt/qualla-1.1.0/bin/api", "api"),
    ("/tmp/perf-4182.map", "perf-PID.map"),
    ("[kernel.kallsyms]", "[kernel.kallsyms]"),
    ("[vdso]", "[vdso]"),
])
def test_library_identity(path, identity):
    assert library_identity(path) == identity


def test_a_clone_in_one_build_and_not_the_next_is_one_function():
    assert function_key("pick_batch(std::vector<Job>&) [clone .isra.0]",
                        "/opt/gateway-1.0/bin/gateway") == \
        function_key("pick_batch(std::vector<Job>&)", "/opt/gateway-1.1/bin/gateway")
