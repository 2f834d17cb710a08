"""Call trees: top-down (the flame graph), bottom-up (inverted), and callers/callees of
one function (the sandwich view)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..profile import Profile
from .functions import stack_functions


@dataclass
class Node:
    function_id: int  # -1 for the root
    total: int = 0
    self: int = 0
    children: dict[int, "Node"] = field(default_factory=dict)

    def child(self, fid: int) -> "Node":
        n = self.children.get(fid)
        if n is None:
            n = self.children[fid] = Node(fid)
        return n


def top_down(profile: Profile, weights: dict[int, int]) -> Node:
    """Root-first merged stacks: the flame graph's tree."""
    root = Node(-1)
    for sid, w in weights.items():
        node = root
        node.total += w
        for fid in reversed(stack_functions(profile, profile.stacks[sid])):
            node = node.child(fid)
            node.total += w
        node.self += w
    return root


def bottom_up(profile: Profile, weights: dict[int, int]) -> Node:
    """Leaf-first merged stacks: which callers the self time came through."""
    root = Node(-1)
    for sid, w in weights.items():
        node = root
        node.total += w
        for fid in stack_functions(profile, profile.stacks[sid]):
            node = node.child(fid)
            node.total += w
        node.self += w
    return root


def sandwich(profile: Profile, weights: dict[int, int], function_id: int) -> tuple[Node, Node]:
    """(callers tree rooted at the function, callees tree rooted at it). Each sample is
    split at the function's outermost occurrence so recursion is not counted twice."""
    callers, callees = Node(function_id), Node(function_id)
    for sid, w in weights.items():
        funcs = stack_functions(profile, profile.stacks[sid])
        try:
            at = len(funcs) - 1 - funcs[::-1].index(function_id)  # outermost
        except ValueError:
            continue
        callers.total += w
        callees.total += w
        node = callers
        for fid in funcs[at + 1:]:  # towards the root
            node = node.child(fid)
            node.total += w
        node = callees
        for fid in reversed(funcs[:at]):  # towards the leaf
            node = node.child(fid)
            node.total += w
        if at == 0:
            callees.self += w
        else:
            node.self += w
    return callers, callees


def to_dict(profile: Profile, node: Node, min_weight: int = 0) -> dict:
    """JSON form; children below `min_weight` are folded into one `[other]` entry so huge
    trees stay small (the viewer asks for the detail when it zooms in)."""
    fn = profile.functions[node.function_id] if node.function_id >= 0 else None
    out: dict = {
        "name": fn.name if fn else "root",
        "dso": profile.mappings[fn.mapping_id].path if fn else "",
        "kind": profile.mappings[fn.mapping_id].kind if fn else "",
        "self": node.self,
        "total": node.total,
    }
    kids = sorted(node.children.values(), key=lambda n: (-n.total, n.function_id))
    shown = [k for k in kids if k.total >= min_weight]
    hidden = sum(k.total for k in kids) - sum(k.total for k in shown)
    out["children"] = [to_dict(profile, k, min_weight) for k in shown]
    if hidden:
        out["children"].append({"name": "[other]", "dso": "", "kind": "merged",
                                "self": hidden, "total": hidden, "children": []})
    return out
