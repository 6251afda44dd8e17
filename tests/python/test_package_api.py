"""The Python package as a user meets it in help(), an editor and a type checker.

* ``axon.__all__`` is the union of the API modules' ``__all__`` and names only things that exist,
  so help(axon) lists every call (pydoc lists only ``__all__``'s names once there is one).
* Every public callable and class (and every public method and property of those classes) has a
  docstring of its own, not one inherited or made up of a signature alone.
* Every public function has type hints; the installed package carries ``py.typed``.
"""

from __future__ import annotations

import enum
import inspect
import pydoc
from pathlib import Path

import axon
import axon.collectives
import axon.errors
import axon.gpu
import axon.memory
import axon.onesided
import axon.p2p
import axon.runtime
import axon.space

API_MODULES = (axon.runtime, axon.memory, axon.gpu, axon.onesided, axon.collectives, axon.p2p, axon.errors)
#: Classes whose builtin namesakes `from axon import *` must not rebind (errors.__all__ says why).
SHADOWING = {"TimeoutError", "SystemError"}


def _public_objects():
    """(qualified name, object) for every name of axon.__all__ and axon.space.__all__, every
    error class, and the public methods and properties that axon's own classes define."""
    seen = {}
    names = [(f"axon.{n}", getattr(axon, n)) for n in axon.__all__]
    names += [(f"axon.space.{n}", getattr(axon.space, n)) for n in axon.space.__all__]
    names += [(f"axon.{cls.__name__}", cls) for cls in axon.errors.ALL]
    for qual, obj in names:
        if inspect.ismodule(obj) or not callable(obj) or id(obj) in seen:
            continue
        seen[id(obj)] = (qual, obj)
        if inspect.isclass(obj) and not issubclass(obj, (BaseException, enum.Enum)):
            for attr, member in vars(obj).items():
                if attr.startswith("_"):
                    continue
                if isinstance(member, property) or callable(member) or type(member).__name__.startswith("nb_"):
                    seen[id(member)] = (f"{qual}.{attr}", member)
    return list(seen.values())


def _own_doc(obj) -> str:
    """The docstring written for `obj`: a class's own (not its base's), a property's getter's, and
    for the extension's functions the text after the signature nanobind puts first."""
    if inspect.isclass(obj):
        doc = vars(obj).get("__doc__") or ""
    elif isinstance(obj, property):
        return _own_doc(obj.fget) if obj.fget is not None else ""
    else:
        doc = getattr(obj, "__doc__", None) or ""
    if hasattr(obj, "__nb_signature__"):
        # nanobind: "name(args) -> ret" for every overload, then a blank line and the docstring.
        doc = doc.partition("\n\n")[2] if "\n\n" in doc else ""
    return doc.strip()


def test_all_is_the_union_of_the_api_modules():
    exported = set(axon.__all__)
    assert len(exported) == len(axon.__all__), "a name is listed twice in axon.__all__"
    for name in axon.__all__:
        assert hasattr(axon, name), f"axon.__all__ names {name}, which axon does not have"
    for module in API_MODULES:
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.__all__ names {name}, which it lacks"
            assert name in exported, f"{module.__name__}.{name} is missing from axon.__all__"
            assert getattr(axon, name) is getattr(module, name), f"axon.{name} is not {module.__name__}.{name}"
    assert "space" in exported and not (SHADOWING & exported)
    # The two shadowing classes stay reachable by their qualified names.
    assert axon.TimeoutError.code == -6 and axon.SystemError.code == -11


def test_every_public_callable_and_class_has_a_docstring():
    objects = _public_objects()
    assert len(objects) > 150, f"walked only {len(objects)} objects: the walk is broken"
    missing = [qual for qual, obj in objects if len(_own_doc(obj)) < 10]
    assert not missing, "no docstring: " + ", ".join(sorted(missing))


def test_the_calls_the_issue_named_have_docstrings():
    # init, finalize, the atomics and every error class lacked one (issue 41).
    for obj in (axon.init, axon.finalize, axon.atomic_fetch_add, axon.atomic_compare_swap, axon.fence,
                axon.quiet, axon.Team, axon.TimeoutError, axon.InvalidArgumentError, axon.UcxError):
        assert len(_own_doc(obj)) >= 10, obj


def test_help_lists_the_main_calls():
    text = pydoc.render_doc(axon, renderer=pydoc.plaintext)
    for call in ("init", "finalize", "my_pe", "n_pes", "zeros", "put", "get", "put_signal", "signal_wait_until",
                 "atomic_fetch_add", "barrier_all", "allreduce", "allgather", "broadcast", "send", "recv",
                 "isend", "wait_all", "team_world"):
        assert f"\n    {call}(" in text, f"help(axon) does not list {call}()"
    for cls in ("Team", "SymmetricGpuArray", "InvalidArgumentError", "PeerDeadError", "ReduceOp"):
        assert f"class {cls}" in text, f"help(axon) does not list class {cls}"
    # The one-line summaries come through, not only the names.
    assert "Join the job" in text and "Copy `src` (local) into PE `pe`'s `dest`" in text


def test_public_functions_have_type_hints():
    unhinted = []
    for qual, obj in _public_objects():
        if not inspect.isfunction(obj) or not obj.__module__.startswith("axon") or obj.__module__ == "axon.space":
            continue
        sig = inspect.signature(obj)
        params = [p for p in sig.parameters.values() if p.name != "self"]
        if sig.return_annotation is inspect.Signature.empty:
            unhinted.append(f"{qual} -> ?")
        unhinted += [f"{qual}({p.name})" for p in params if p.annotation is inspect.Parameter.empty]
    assert not unhinted, "no type hint: " + ", ".join(unhinted)
    # The hints resolve (no name that only exists for the string form).
    import typing
    for fn in (axon.put, axon.allreduce, axon.zeros, axon.send, axon.group, axon.init, axon.team_world):
        typing.get_type_hints(fn, vars(inspect.getmodule(fn)))


def test_py_typed_ships_in_the_installed_package():
    package = Path(axon.__file__).resolve().parent
    assert (package / "py.typed").is_file(), f"{package} has no py.typed"
    # The installed package, not the source tree: the tests must see what pip put there.
    assert any(package.glob("_axon*.so")), f"{package} holds no compiled extension: not the installed package"
