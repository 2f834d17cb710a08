"""A profile with one inlined call, for tests of what inline frames do to a view or an
export: main -> outer (helper inlined into it at one address) -> leaf, six samples."""
from analysis.profile import NO_ID, Profile


def inline_profile(build_id: str = "", period: int = 0, tid: int = NO_ID):
    """(profile, (main, outer, helper, leaf) function ids): 3 samples main;outer+helper;leaf,
    2 main;outer+helper, 1 main; the inline location (0x20) is helper.h:7 in app.c:12."""
    p = Profile("test")
    m = p.mapping("/bin/app", build_id=build_id)
    main, outer, helper, leaf = (p.function(n, m) for n in ("main", "outer", "helper", "leaf"))
    l_leaf = p.add_location(m, 0x30, (leaf,))
    l_inl = p.add_location(m, 0x20, (helper, outer))
    p.locations[l_inl].lines = (("helper.h", 7), ("app.c", 12))
    l_main = p.add_location(m, 0x10, (main,))
    ev = p.event("cycles")
    for stack, n in (((l_leaf, l_inl, l_main), 3), ((l_inl, l_main), 2), ((l_main,), 1)):
        sid = p.stack(stack)
        for _ in range(n):
            p.add_sample(sid, event_id=ev, period=period, tid=tid, pid=tid)
    return p, (main, outer, helper, leaf)
